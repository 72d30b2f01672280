"""Small Block Kit element builders that enforce Slack's limits at the point of use."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from agent_runtime.messages import JSONValue

from .mrkdwn import escape, escape_truncate, plain, truncate, visible_bidi

Block = dict[str, Any]
"""One Block Kit block or element, as JSON sent to Slack."""

SECTION_TEXT = 3000
HEADER_TEXT = 150
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
CONFIRM_TITLE = 100
CONFIRM_TEXT = 300
CONFIRM_BUTTON = 30
CONTEXT_ELEMENTS = 10
MODAL_BLOCKS = 100
MESSAGE_BLOCKS = 50
PRIVATE_METADATA = 3000
TEXT_INPUT = 3000

_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")


def plain_text(text: str, limit: int) -> Block:
    return {"type": "plain_text", "text": plain(text, limit) or " ", "emoji": True}


def mrkdwn(text: str, *, verbatim: bool = True) -> Block:
    """A mrkdwn text object; ``text`` must already be escaped and within its limit."""
    return {"type": "mrkdwn", "text": text or " ", "verbatim": verbatim}


def section(text: str) -> Block:
    """A section of already escaped mrkdwn, cut safely to the section limit."""
    return {"type": "section", "text": mrkdwn(truncate(text, SECTION_TEXT))}


def header(text: str) -> Block:
    return {"type": "header", "text": plain_text(text, HEADER_TEXT)}


def context(parts: Sequence[str]) -> Block:
    """A context block of escaped mrkdwn parts (at most ten, each within a section's limit)."""
    elements = [mrkdwn(truncate(p, SECTION_TEXT)) for p in parts[:CONTEXT_ELEMENTS]]
    return {"type": "context", "elements": elements}


def button(
    text: str,
    *,
    action_id: str,
    value: str,
    style: Literal["primary", "danger"] | None = None,
    confirm: Block | None = None,
) -> Block:
    if len(value) > BUTTON_VALUE:
        raise ValueError(f"button value of {len(value)} chars exceeds {BUTTON_VALUE}")
    element: Block = {
        "type": "button",
        "text": plain_text(text, BUTTON_TEXT),
        "action_id": action_id,
        "value": value,
    }
    if style is not None:
        element["style"] = style
    if confirm is not None:
        element["confirm"] = confirm
    return element


def confirm_dialog(*, title: str, text: str, confirm: str, deny: str = "Cancel") -> Block:
    """A confirm dialog; every field is plain text cut to its limit."""
    return {
        "title": plain_text(title, CONFIRM_TITLE),
        "text": plain_text(text, CONFIRM_TEXT),
        "confirm": plain_text(confirm, CONFIRM_BUTTON),
        "deny": plain_text(deny, CONFIRM_BUTTON),
        "style": "danger",
    }


def is_user_id(value: str) -> bool:
    """Whether ``value`` is a Slack user id (``U…``, ``W…``), not a job's name or a group."""
    return bool(_USER_ID.match(value))


def user_mention(user_id: str) -> str:
    """``<@U…>`` for a well-formed user id; anything else is shown escaped, never as a mention."""
    return f"<@{user_id}>" if _USER_ID.match(user_id) else escape(user_id)


def mentions(user_ids: Sequence[str]) -> str:
    """``<@A>, <@B>``: the first twenty of ``user_ids`` (a quorum's approvers, say)."""
    return ", ".join(user_mention(user) for user in user_ids[:20])


def date_token(when: datetime, *, template: str = "{date_short_pretty} at {time}") -> str:
    """A Slack date token, so every reader sees ``when`` in their own time zone."""
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    fallback = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(when.timestamp())}^{template}|{fallback}>"


def to_text(value: JSONValue) -> str:
    """A JSON value shown as text: strings as they are, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def args_json(args: Mapping[str, JSONValue] | None) -> str:
    """Tool arguments as indented JSON, the exact text approvers review and edit (a
    bidirectional control as its escape, so the text reads as the value it is)."""
    return visible_bidi(json.dumps(dict(args or {}), indent=2, ensure_ascii=False, default=str))


def escaped(text: str, limit: int = SECTION_TEXT) -> str:
    """Shorthand for untrusted text inside mrkdwn."""
    return escape_truncate(text, limit)
