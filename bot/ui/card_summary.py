"""What a card asks, as its first sections: a call's (or a job's) description and why, its
arguments, what it will act on and what changed since; each long part cut to fit its
section (shorter on a compact card), every code block closed."""

from __future__ import annotations

import json

from agent_runtime.messages import JSONValue

from .blocks import SECTION_TEXT, Block, args_json, context, escaped, section
from .cards import Card
from .mrkdwn import code_block, code_span, escape, is_truncated

COMPACT_TEXT = 500
"""Each long part's length on a compact card: the one drawn when Slack refuses the whole
card as too long (``msg_blocks_too_long``), though each block is within its own limit."""
CUT_NOTE = "Cut to fit in Slack: *Full details* shows all of it."


def part_length(full: int, compact: bool) -> int:
    """How long one long part may be: ``full``, or COMPACT_TEXT on a compact card."""
    return min(full, COMPACT_TEXT) if compact else full


def summary(card: Card, *, edited: bool = False, compact: bool = False) -> list[Block]:
    """What was asked; once ``edited``, its description and arguments are labelled as
    asked, since the call that ran is the edit (shown below them). A ``compact`` one cuts
    each long part short and says so."""
    blocks = [section(text) for text in _asked(card, edited, part_length(SECTION_TEXT, compact))]
    label = _args_label(card, edited)
    if label is not None:
        blocks.append(code_section(label, args_json(card.args), compact))
    blocks += _acts_on(card, compact)
    return blocks + ([context([CUT_NOTE])] if compact else [])


def _asked(card: Card, edited: bool, room: int | None) -> list[str]:
    """What was asked, as the texts of the card's first sections before each is cut to a
    section: a job's details, or a call's (or a question's) description and why; each
    long part cut to ``room``, or whole (None)."""

    def shown(text: str) -> str:
        return escape(text) if room is None else escaped(text, room)

    if card.external:
        return [shown(card.reason)] if card.reason else []
    what = f"*{escaped(card.agent, 200)}* wants to run {code_span(card.action, 300)}"
    if card.question:
        what = f"*{escaped(card.agent, 200)}* asks"
        if card.args is not None:
            what += f" while running {code_span(card.action, 300)}"
    if card.description:
        what += "\n" + ("As asked: " if edited else "") + shown(card.description)
    if card.question and card.reason:
        what += ":\n" + shown(card.reason)
    if card.reason and not card.question:
        return [what, "*Why:* " + shown(card.reason)]
    return [what]


def _args_label(card: Card, edited: bool) -> str | None:
    """The label over the card's arguments (a job's params, shown when it has some);
    None when it shows none."""
    if card.external:
        return ("*Params as asked*" if edited else "*Params*") if card.args else None
    if card.args is None:
        return None
    return "*Arguments as asked*" if edited else "*Arguments*"


def cuts_beside_args(card: Card) -> bool:
    """Whether the full card cuts what it shows beside its arguments: what was asked (a
    job's details, a call's description and why, a question), what the call will act on,
    or what changed since an earlier card. Full details then shows them whole."""
    if any(len(text) > SECTION_TEXT for text in _asked(card, False, None)):
        return True
    if card.acts_on is not None and is_truncated(printed(card.acts_on), code_room(_ACTS_ON)):
        return True
    if card.changed is None:
        return False
    _, lines, room = _changes(card)
    return any(is_truncated(text, room) for _, text in lines)


_ACTS_ON = "*It will act on*"


def _acts_on(card: Card, compact: bool = False) -> list[Block]:
    """What the call will act on (its precondition's answer), and what changed since an
    earlier approval, so the approver sees the difference they are asked about."""
    blocks = []
    if card.changed is not None:
        title, lines, room = _changes(card)
        shown = [lead + code_block(text, part_length(room, compact)) for lead, text in lines]
        blocks.append(section(title + "".join(shown)))
    if card.acts_on is not None:
        blocks.append(code_section(_ACTS_ON, printed(card.acts_on), compact))
    return blocks


def code_room(label: str) -> int:
    """The room a code block under ``label`` has in a section: a section cut past its
    limit would take the block's closing fence, and show the rest as mrkdwn."""
    return SECTION_TEXT - len(f"{label}\n")


def code_section(label: str, text: str, compact: bool) -> Block:
    """``label`` over ``text`` in a code block cut to the room the label leaves."""
    return section(f"{label}\n" + code_block(text, part_length(code_room(label), compact)))


def _changes(card: Card) -> tuple[str, list[tuple[str, str]], int]:
    """What changed since an earlier card, as its section shows it: the title, what was
    added, removed and is now (each its lead and text), and the room each code block
    gets, an equal share of what the section leaves, so every block stays closed."""
    changed = card.changed or {}
    title = (
        "Edited: not what the earlier card showed"
        if card.changed_by_edit
        else "Changed since it was answered"
        if card.changed_after_reply
        else "Changed since it was approved"
    )
    heading = f":warning: *{title}*"
    lines = [
        (f"\n{label}: ", printed(changed[key]))
        for key, label in (("added", "Added"), ("removed", "Removed"), ("now", "Now"))
        if changed.get(key) not in (None, [])
    ]
    room = (SECTION_TEXT - len(heading) - sum(len(lead) for lead, _ in lines)) // max(len(lines), 1)
    return heading, lines, room


def printed(value: JSONValue) -> str:
    """A check's output as printed (a job's lines of text), anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(str(v) for v in value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
