"""Modals: edit the arguments, deny with a reason, reply instead of running, full arguments.

Each modal's ``private_metadata`` is what its button carried (interrupt id and args
digest); on submit the bot looks the
interrupt up in storage again, exactly as for a button click.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from agent_runtime.messages import JSONValue

from . import ids
from .arg_form import Field, form_blocks, loads_finite
from .batch_message import DAMAGED_ITEM
from .blocks import (
    MODAL_BLOCKS,
    PRIVATE_METADATA,
    SECTION_TEXT,
    TEXT_INPUT,
    Block,
    args_json,
    plain_text,
    section,
)
from .card_summary import printed
from .cards import Card, Outcome, Verdict
from .message import RUN_WITH, message_label
from .mrkdwn import code_span, code_text, escape, fence_safe

_TITLE = 24


def edit_modal(card: Card, fields: Sequence[Field] | None = None) -> Block:
    """A form of the arguments (``fields``, from their schema), prefilled, for the approver
    to change before the tool runs; the arguments as JSON when there is no schema."""
    if fields:
        intro = f"Change the arguments {code_span(card.action, 200)} runs with."
        inputs = form_blocks(fields, card.args or {})
        if any(len(b["element"].get("initial_value") or "") > TEXT_INPUT for b in inputs):
            return _too_long()
        blocks = [section(intro), *inputs]
        return _view(
            ids.EDIT_VIEW,
            card.button_value,
            title="Edit arguments",
            blocks=blocks,
            submit="Run with these",
        )
    text = args_json(card.args)
    if len(text) > TEXT_INPUT:
        return _too_long()
    element = {
        "type": "plain_text_input",
        "action_id": ids.INPUT_ACTION,
        "multiline": True,
        "max_length": TEXT_INPUT,
        "initial_value": text,
    }
    return _form(
        ids.EDIT_VIEW,
        card,
        title="Edit arguments",
        submit="Run with these",
        intro=f"Change the arguments {code_span(card.action, 200)} runs with (JSON).",
        label="Arguments (JSON)",
        element=element,
        optional=False,
    )


def _too_long() -> Block:
    return _notice(
        "Edit arguments",
        "These arguments are too long to edit in Slack. Approve, deny or reply instead.",
    )


def _text_area() -> Block:
    """A multi-line text input for a reason or a reply."""
    return {
        "type": "plain_text_input",
        "action_id": ids.INPUT_ACTION,
        "multiline": True,
        "max_length": TEXT_INPUT,
    }


def deny_modal(card: Card) -> Block:
    """An optional reason, returned to whoever asked (the agent gets it as the tool's result)."""
    element = _text_area()
    verb = "Decline" if card.question else "Deny"
    return _form(
        ids.DENY_VIEW,
        card,
        title=verb,
        submit=verb,
        intro=f"The reason goes back to {'the job' if card.external else 'the agent'} that asked.",
        label="Reason",  # Slack marks an optional input "(optional)" itself
        element=element,
        optional=True,
    )


def reply_modal(card: Card) -> Block:
    """Text returned to whoever asked instead of an approval (see ``_reply_intro``)."""
    element = _text_area()
    return _form(
        ids.REPLY_VIEW,
        card,
        title="Reply",
        submit="Send reply",
        intro=_reply_intro(card),
        label="Reply",
        element=element,
        optional=False,
    )


def _reply_intro(card: Card) -> str:
    """What happens to a reply, which depends on who asked."""
    if card.question:
        return "Your answer goes back to the agent."
    if card.external:
        return "Your reply goes to the job that asked, which decides what to do with it."
    if card.asked_by_code:
        tool = code_span(card.action, 200)
        return f"Your reply goes to {tool}, which decides what to do with it."
    return "Your reply becomes the tool's result; the tool does not run."


def args_modal(card: Card, verdict: Verdict | None = None) -> Block:
    """The full arguments (a request's details first), in sections that each fit; the
    card's other long parts, which a compact card (one Slack found too long) cuts short;
    and its decision's text and edited arguments (``verdict``'s, or the held decision's)."""
    sections = _about(card)
    if card.args is not None:
        sections += _code_sections(args_json(card.args))
    for key, label in (("added", "Added"), ("removed", "Removed"), ("now", "Now")):
        if card.changed and card.changed.get(key) not in (None, []):
            sections += [section(f"*{label}*"), *_code_sections(printed(card.changed[key]))]
    if card.acts_on is not None:
        sections += [section("*It will act on*"), *_code_sections(printed(card.acts_on))]
    if verdict is not None:
        edited = verdict.args if verdict.outcome == "edited" else None
        sections += _decision(verdict.outcome, verdict.message, edited)
    elif card.held is not None:
        sections += _decision(card.held.outcome, card.held.message, card.held.args)
    return _details_view(card, sections)


def _decision(
    outcome: Outcome, message: str | None, args: Mapping[str, JSONValue] | None
) -> list[Block]:
    """A decision's text whole under its label, and the arguments an edit runs with."""
    sections = []
    if message:
        text = message_label(outcome) + escape(message)
        sections += [section(p) for p in _split(text, SECTION_TEXT)]
    if args is not None:
        sections += [section(RUN_WITH), *_code_sections(args_json(args))]
    return sections


def batch_details_modal(
    card: Card, items: Sequence[tuple[int, Mapping[str, JSONValue]]], damaged: Sequence[int]
) -> Block:
    """A batch card's Full details (``card`` its lead's): its details, then each item's
    arguments whole, numbered by their ``(place, arguments)`` as on the card, and the
    places of the items ``damaged`` said to be so."""
    entries = [*items, *((place, None) for place in damaged)]
    parts = []
    for place, args in sorted(entries, key=lambda entry: entry[0]):
        if args is None:
            parts.append(f"*{place + 1}.* {DAMAGED_ITEM}")
            continue
        code = code_text(args_json(args))
        parts += [f"*{place + 1}.*", *_fenced(code)]
    packed: list[str] = []
    for part in parts:  # as few sections as fit, so a hundred items fit in one modal
        if packed and len(packed[-1]) + 1 + len(part) <= SECTION_TEXT:
            packed[-1] += "\n" + part
        else:
            packed.append(part)
    return _details_view(card, _about(card) + [section(p) for p in packed])


def _about(card: Card) -> list[Block]:
    """A request's details, or a call's description and why, in sections that each fit."""
    if card.external and card.reason:
        return [section(p) for p in _split(escape(card.reason), SECTION_TEXT)]
    if card.description or card.reason:
        why = f"*Why:* {escape(card.reason)}" if card.reason else ""
        text = "\n".join(t for t in (escape(card.description or ""), why) if t)
        return [section(p) for p in _split(text, SECTION_TEXT)]
    return []


def _details_view(card: Card, sections: list[Block]) -> Block:
    """The Full details modal of ``sections``, cut (and saying so) past a modal's blocks."""
    blocks = sections[: MODAL_BLOCKS - 1] or [section("_No arguments._")]
    if len(sections) > MODAL_BLOCKS - 1:
        blocks.append(section("_Cut: this is longer than a modal can show._"))
    return _view(ids.ARGS_VIEW, card.button_value, title="Full details", blocks=blocks, submit=None)


def _code_sections(text: str) -> list[Block]:
    """``text`` as code blocks, in sections that each fit."""
    return [section(block) for block in _fenced(code_text(text))]


def _fenced(code: str) -> list[str]:
    """``code`` (``code_text``'s) as code blocks that each fit a section: a cut next to a
    backtick must not let it join the block's fence, which would end the block early."""
    return [f"```{fence_safe(p)}```" for p in _split(code, SECTION_TEXT - 8)]


def errors_for(message: str, block: str = ids.INPUT_BLOCK) -> dict[str, str]:
    """A ``response_action: errors`` map that shows ``message`` under the modal's input
    ``block``, as plain text (Slack shows a modal's errors so): a mention of a user or a
    group as its id, a channel as ``#`` and its id, a date as its fallback text, and the
    mrkdwn entities as their characters."""
    plain = _CHANNEL.sub(r"#\1", _MENTION.sub(r"@\1", _DATE.sub(r"\1", message)))
    plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return {block: plain[:2000]}


_MENTION = re.compile(r"<(?:@|!subteam\^)([A-Z0-9]+)(?:\|[^>]*)?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|[^>]*)?>")
_DATE = re.compile(r"<!date\^[^|>]*\|([^>]*)>")


def _form(
    callback_id: str,
    card: Card,
    *,
    title: str,
    submit: str,
    intro: str,
    label: str,
    element: Block,
    optional: bool,
) -> Block:
    blocks = [
        section(intro),
        {
            "type": "input",
            "block_id": ids.INPUT_BLOCK,
            "label": plain_text(label, 2000),
            "element": element,
            "optional": optional,
        },
    ]
    return _view(callback_id, card.button_value, title=title, blocks=blocks, submit=submit)


def _notice(title: str, text: str) -> Block:
    return _view(ids.ARGS_VIEW, "", title=title, blocks=[section(escape(text))], submit=None)


def _view(
    callback_id: str, metadata: str, *, title: str, blocks: list[Block], submit: str | None
) -> Block:
    if len(metadata) > PRIVATE_METADATA:
        raise ValueError("an interrupt id does not fit in private_metadata")
    view: Block = {
        "type": "modal",
        "callback_id": callback_id,
        "private_metadata": metadata,
        "title": plain_text(title, _TITLE),
        "close": plain_text("Close" if submit is None else "Cancel", _TITLE),
        "blocks": blocks,
    }
    if submit is not None:
        view["submit"] = plain_text(submit, _TITLE)
    return view


def _split(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, never splitting an entity."""
    pieces: list[str] = []
    while text:
        cut = min(size, len(text))
        amp = text.rfind("&", max(0, cut - 4), cut)
        if cut < len(text) and amp != -1 and text.find(";", amp) >= cut:
            cut = amp
        pieces.append(text[:cut])
        text = text[cut:]
    return pieces or [" "]


MAX_ARGS_DEPTH = 32
"""How deeply edited arguments may nest: no tool takes more, and a parser needs a bound."""

_TOO_DEEP = f"The arguments nest more than {MAX_ARGS_DEPTH} levels deep; flatten them."


def parse_args(text: str) -> Mapping[str, JSONValue] | str:
    """The edited arguments as a JSON object, or a message saying what is wrong."""
    try:
        value = loads_finite(text)
    except json.JSONDecodeError as exc:
        return f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
    except RecursionError:
        return _TOO_DEEP
    except ValueError as exc:
        return str(exc)
    if not isinstance(value, dict):
        return 'The arguments must be a JSON object, like {"path": "/tmp"}.'
    if _depth(value) > MAX_ARGS_DEPTH:
        return _TOO_DEEP
    return value


def _depth(value: JSONValue) -> int:
    """How many objects and arrays deep ``value`` nests (counted without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return deepest
