"""The Slack message for one interrupt: while it waits, and after it is decided.

Agent text (action, description, reason, arguments) is escaped everywhere it appears,
the ``text`` notification fallback included, and every Block Kit limit holds for any input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from agent_runtime.messages import JSONValue

from . import ids
from .blocks import (
    SECTION_TEXT,
    Block,
    args_json,
    button,
    context,
    date_token,
    escaped,
    header,
    mentions,
    section,
    user_mention,
)
from .card_buttons import args_cut, choices, decision_buttons, full_details, more_menu, see_all
from .cards import Card, Held, Outcome, Verdict
from .mrkdwn import code_block, code_span, escape, is_truncated

FALLBACK_TEXT = 3000
COMPACT_TEXT = 500
"""Each long part's length on a compact card: the one drawn when Slack refuses the whole
card as too long (``msg_blocks_too_long``), though each block is within its own limit."""
CUT_NOTE = "Cut to fit in Slack: *Full details* shows all of it."

HEADLINE: dict[Outcome, str] = {
    "approved": "Approved",
    "denied": "Denied",
    "edited": "Approved with edits",
    "responded": "Answered instead of run",
    "answered": "Answered",
    "declined": "Declined",
    "replied": "Replied",
    "expired": "Expired, not approved",
    "unanswered": "Expired, not answered",
    "cancelled": "Cancelled",
    "withdrawn": "Withdrawn",
    "changed": "Changed since it was approved",
    "reply_changed": "Changed since it was answered",
    "edit_changed": "Edited, so asked again",
    "approved_by_default": "Approved by default",
}
ICON: dict[Outcome, str] = {
    "approved": ":white_check_mark:",
    "denied": ":no_entry:",
    "edited": ":pencil2:",
    "responded": ":speech_balloon:",
    "answered": ":speech_balloon:",
    "declined": ":no_entry:",
    "replied": ":speech_balloon:",
    "expired": ":hourglass:",
    "unanswered": ":hourglass:",
    "cancelled": ":heavy_multiplication_x:",
    "withdrawn": ":leftwards_arrow_with_hook:",
    "changed": ":warning:",
    "reply_changed": ":warning:",
    "edit_changed": ":warning:",
    "approved_by_default": ":white_check_mark:",
}


@dataclass(frozen=True, kw_only=True)
class SlackMessage:
    """The ``text`` fallback and ``blocks`` of a chat.postMessage / chat.update call."""

    text: str
    blocks: list[Block]


def pending_message(card: Card, *, compact: bool = False) -> SlackMessage:
    """The interactive message approvers act on: what, why, the exact arguments, buttons;
    ``compact``, its long parts cut short and shown whole by Full details."""
    if card.held is not None:
        return _held_message(card, card.held, compact=compact)
    title = "Question:" if card.question else "Approval needed:"
    blocks = [
        header(f"{title} {card.action}"),
        *_summary(card, compact=compact),
        context(status_parts(card)),
    ]
    if card.question and card.options:
        blocks.append(choices(card, compact=compact))
    buttons = decision_buttons(card, details=compact or cuts_beside_args(card))
    if buttons:
        blocks.append({"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": buttons})
    return SlackMessage(text=_fallback(title, card), blocks=blocks)


def decided_message(card: Card, verdict: Verdict, *, compact: bool = False) -> SlackMessage:
    """The same message after the decision: outcome, who, when; the buttons are gone
    but Full details, on a card that cuts something (a ``compact`` one does)."""
    headline = HEADLINE[verdict.outcome]
    parts = _verdict_parts(verdict)
    if card.approvals and len(card.approvals) < card.min_approvals:  # a quorum cut short
        who = mentions(card.approvals)
        parts.append(
            f"{len(card.approvals)} of {card.min_approvals} approvals before it ended: {who}"
        )
    if verdict.trust:
        parts.append(verdict.trust)
    if card.escalated:  # the first card still says where it went
        parts.append(f":arrow_up: {card.escalated}")
    if card.requested_by:
        parts.append(f"Requested by {user_mention(card.requested_by)}")
    edited = verdict.outcome == "edited" and verdict.args is not None
    run_with = verdict.args if edited else None
    blocks = [
        header(f"{headline}: {card.action}"),
        *_summary(card, edited=edited, compact=compact),
        context(parts),
        *_what_it_does(verdict.outcome, verdict.message, run_with, compact=compact),
    ]
    if verdict.outcome in ("changed", "reply_changed", "edit_changed"):
        why = {
            "changed": "what it acts on changed after the approval",
            "reply_changed": "what it acts on changed after the reply",
        }.get(verdict.outcome, "the edited call acts on other items than this card showed")
        blocks.append(section(f"Not run: {why}, so the approvers are asked again in this thread."))
    if verdict.run_withdrawn_by:
        what = "Not run" if verdict.outcome in WOULD_RUN else "Never passed on to the agent"
        who = user_mention(verdict.run_withdrawn_by)
        blocks.append(
            section(f"{what}: {who} withdrew the run while it waited for its other cards.")
        )
    if verdict.run_lost and verdict.outcome not in ("cancelled", "withdrawn"):
        blocks.append(section(lost_run_note(verdict.outcome, verdict.run_lost)))
    cut = cuts_beside_args(card) or args_cut(card)
    if compact or cut or _cuts_what_it_does(verdict.outcome, verdict.message, run_with):
        elements = [full_details(card)]
        blocks.append({"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": elements})
    return SlackMessage(text=_fallback(f"{headline}:", card), blocks=blocks)


def lost_run_note(outcome: Outcome, lost: str) -> str:
    """Why a decision of a run ended by a lost request never took effect."""
    what = "Not run" if outcome in WOULD_RUN else "Never passed on to the agent"
    return (
        f"{what}: the run was cancelled because request {code_span(lost, 200)} was lost "
        "from Redis and can no longer be decided."
    )


WOULD_RUN = frozenset({"approved", "edited", "approved_by_default"})
"""Outcomes whose call would have run."""


def _what_it_does(
    outcome: Outcome,
    message: str | None,
    args: Mapping[str, JSONValue] | None,
    *,
    compact: bool = False,
) -> list[Block]:
    """A decision's reason, reply or answer, cut to the room its label leaves, and the
    arguments an edit runs with."""
    blocks = []
    if message:
        label = message_label(outcome)
        text = escaped(message, _room(SECTION_TEXT - len(label), compact))
        blocks.append(section(label + text))
    if args is not None:
        blocks.append(_code_section(RUN_WITH, args_json(args), compact))
    return blocks


RUN_WITH = "*Run with*"


def message_label(outcome: Outcome) -> str:
    """The label before a decision's text: a reply's, an answer's, or a reason's."""
    label = {
        "responded": "Reply",
        "replied": "Reply",
        "reply_changed": "Reply",
        "answered": "Answer",
    }.get(outcome, "Reason")
    return f"*{label}:* "


def _cuts_what_it_does(
    outcome: Outcome, message: str | None, args: Mapping[str, JSONValue] | None
) -> bool:
    """Whether the full card cuts a decision's text or the arguments an edit runs with."""
    if message and len(escape(message)) > SECTION_TEXT - len(message_label(outcome)):
        return True
    return args is not None and is_truncated(args_json(args), _code_room(RUN_WITH))


def _held_message(card: Card, held: Held, *, compact: bool) -> SlackMessage:
    """A decision in its undo window: what it will be, by whom, when it takes effect, and
    Undo for anyone who may decide until then."""
    headline = HEADLINE[held.outcome]
    effect = "runs" if held.outcome in ("approved", "edited") else "takes effect"
    quorum = held.outcome == "approved" and len(card.approvals) > 1
    by = f"by {mentions(card.approvals if quorum else (held.by,))}"
    if held.trusted:  # nobody clicked: a grant approved it
        by = f"under the trust {user_mention(held.by)} gave"
    when = f"at {date_token(held.until, template='{time_secs}')} unless someone clicks Undo"
    if effect == "runs" and held.run_waits:
        when = f"final {when}; it runs once its run's other requests are decided"
    else:
        when = f"{effect} {when}"
    parts = [f"{ICON[held.outcome]} {headline} {by}: {when}"]
    if card.requested_by:
        parts.append(f"Requested by {user_mention(card.requested_by)}")
    undo = button("Undo", action_id=ids.UNDO, value=card.button_value, style="danger")
    cut = cuts_beside_args(card) or _cuts_what_it_does(held.outcome, held.message, held.args)
    see = see_all(card, details=compact or cut)
    elements = [undo, *see, more_menu(card)]
    blocks = [
        header(f"{headline}, not yet final: {card.action}"),
        *_summary(card, edited=held.args is not None, compact=compact),
        context(parts),
        *_what_it_does(held.outcome, held.message, held.args, compact=compact),
        {"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": elements},
    ]
    return SlackMessage(text=_fallback(f"{headline}, not yet final:", card), blocks=blocks)


def verdict_note(card: Card, verdict: Verdict) -> str:
    """One line for the requester: the outcome, who decided, what it was about."""
    return f"{_verdict_parts(verdict)[0]}: {code_span(card.action, 200)}"


def _fallback(prefix: str, card: Card) -> str:
    return escaped(f"{prefix} {card.action} ({card.agent})", FALLBACK_TEXT)


def _room(full: int, compact: bool) -> int:
    """How long one long part may be: ``full``, or COMPACT_TEXT on a compact card."""
    return min(full, COMPACT_TEXT) if compact else full


def _summary(card: Card, *, edited: bool = False, compact: bool = False) -> list[Block]:
    """What was asked; once ``edited``, its description and arguments are labelled as
    asked, since the call that ran is the edit (shown below them). A ``compact`` one cuts
    each long part short and says so."""
    blocks = [section(text) for text in _asked(card, edited, _room(SECTION_TEXT, compact))]
    label = _args_label(card, edited)
    if label is not None:
        blocks.append(_code_section(label, args_json(card.args), compact))
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
    if card.acts_on is not None and is_truncated(printed(card.acts_on), _code_room(_ACTS_ON)):
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
        shown = [lead + code_block(text, _room(room, compact)) for lead, text in lines]
        blocks.append(section(title + "".join(shown)))
    if card.acts_on is not None:
        blocks.append(_code_section(_ACTS_ON, printed(card.acts_on), compact))
    return blocks


def _code_room(label: str) -> int:
    """The room a code block under ``label`` has in a section: a section cut past its
    limit would take the block's closing fence, and show the rest as mrkdwn."""
    return SECTION_TEXT - len(f"{label}\n")


def _code_section(label: str, text: str, compact: bool) -> Block:
    """``label`` over ``text`` in a code block cut to the room the label leaves."""
    return section(f"{label}\n" + code_block(text, _room(_code_room(label), compact)))


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


def status_parts(card: Card) -> list[str]:
    parts = []
    if card.requested_by:
        parts.append(f"Requested by {user_mention(card.requested_by)}")
    if card.escalated:
        parts.append(f":arrow_up: {card.escalated}")
    if card.if_nobody is not None:
        parts.append(card.if_nobody)
    if card.deciders and not card.nobody_can_approve:
        parts.append(f"Who may approve: {card.deciders}")
    if card.min_approvals > 1:
        who = mentions(card.approvals)
        so_far = f": {who}" if who else ""
        deny = "; any deny ends it" if "reject" in card.decisions else ""
        parts.append(f"{len(card.approvals)} of {card.min_approvals} approvals{so_far}{deny}")
    if card.dangerous:
        parts.append(":warning: Dangerous action")
    if card.nobody_can_approve:
        parts.append(card.nobody_can_approve)
    elif card.out_of_reach:
        parts.append(card.out_of_reach)
    if card.undone:
        parts.append(card.undone)
    return parts or ["Waiting for a decision"]


def _verdict_parts(verdict: Verdict) -> list[str]:
    icon, headline = ICON[verdict.outcome], HEADLINE[verdict.outcome]
    if verdict.in_app:
        return [f"{icon} {headline}: decided in the app {date_token(verdict.at)}"]
    if verdict.by:
        who = mentions(verdict.by)
        return [f"{icon} {headline} by {who} {date_token(verdict.at)}"]
    return [f"{icon} {headline} {date_token(verdict.at)}"]
