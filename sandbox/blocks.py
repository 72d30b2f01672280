"""Block Kit as Slack's servers treat it: limit checks, generated ids, element lookup.

The limits are the ones in SLACK.md; Slack answers `invalid_blocks` when one is broken,
so the sandbox does too and an app that violates them fails here, not in production.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from .entities import JsonObject
from .errors import SlackApiFailure
from .ids import Ids

MAX_BLOCKS = {"message": 50, "modal": 100, "home": 100}
_INTERACTIVE = {
    "button",
    "static_select",
    "radio_buttons",
    "checkboxes",
    "plain_text_input",
    "overflow",
    "datepicker",
    "users_select",
    "conversations_select",
    "multi_static_select",
}


def _text_of(obj: object) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def _limit_errors(block: JsonObject) -> Iterator[str]:
    kind = block.get("type")
    if len(str(block.get("block_id", ""))) > 255:
        yield "block_id longer than 255"
    if kind == "header" and len(_text_of(block.get("text"))) > 150:
        yield "header text longer than 150"
    if kind == "section":
        if len(_text_of(block.get("text"))) > 3000:
            yield "section text longer than 3000"
        if len(block.get("fields") or []) > 10:
            yield "more than 10 fields"
    if kind == "actions" and len(block.get("elements") or []) > 25:
        yield "more than 25 elements in actions"
    if kind == "context" and len(block.get("elements") or []) > 10:
        yield "more than 10 elements in context"
    for element in elements_of(block):
        if len(str(element.get("action_id", ""))) > 255:
            yield "action_id longer than 255"
        if element.get("type") == "button":
            if len(_text_of(element.get("text"))) > 75:
                yield "button text longer than 75"
            if len(str(element.get("value", ""))) > 2000:
                yield "button value longer than 2000"
            if element.get("style") not in (None, "primary", "danger"):
                yield "button style must be primary or danger"
        yield from _option_errors(element)
        confirm = element.get("confirm")
        if isinstance(confirm, dict):
            for key, most in (("title", 100), ("text", 300), ("confirm", 30), ("deny", 30)):
                if len(_text_of(confirm.get(key))) > most:
                    yield f"confirm {key} longer than {most}"


_MOST_OPTIONS = {
    "static_select": 100,
    "multi_static_select": 100,
    "overflow": 5,
    "checkboxes": 10,
    "radio_buttons": 10,
}


def _option_errors(element: JsonObject) -> Iterator[str]:
    """An element's options past Slack's limits: how many it holds (a select's option
    groups: 100 of 100 options each, labels of 75), each one's text (75) and value (150)."""
    kind, groups = str(element.get("type")), element.get("option_groups") or []
    most = _MOST_OPTIONS.get(kind)
    if most is not None and len(element.get("options") or []) > most:
        yield f"more than {most} options in {kind}"
    if groups and element.get("options"):
        yield f"both options and option_groups in {kind}"
    if len(groups) > 100:
        yield f"more than 100 option groups in {kind}"
    for group in groups:
        if len(group.get("options") or []) > 100:
            yield "more than 100 options in an option group"
        if not 0 < len(_text_of(group.get("label"))) <= 75:
            yield "option group label empty or longer than 75"
    for option in options_of(element):
        if len(_text_of(option.get("text"))) > 75:
            yield "option text longer than 75"
        if len(str(option.get("value", ""))) > 150:
            yield "option value longer than 150"


def _problems(block: JsonObject) -> Iterator[str]:
    parsed = Block.parse(block)
    if parsed is None:
        yield f"unsupported block type {block.get('type')!r}"
        return
    try:
        parsed.validate_json()
    except SlackObjectFormationError as exc:
        yield str(exc)
    yield from _limit_errors(block)


def checked_blocks(raw: object, *, surface: str) -> tuple[JsonObject, ...]:
    """Validate blocks for a message, modal or home tab and fill in Slack's generated ids."""
    if not isinstance(raw, list) or not all(isinstance(b, dict) for b in raw):
        raise SlackApiFailure("invalid_blocks_format")
    if len(raw) > MAX_BLOCKS[surface]:
        limit = MAX_BLOCKS[surface]
        raise SlackApiFailure("invalid_blocks", messages=[f"[ERROR] more than {limit} blocks"])
    out: list[JsonObject] = []
    for index, raw_block in enumerate(raw):
        block = copy.deepcopy(raw_block)
        problems = list(_problems(block))
        if problems:
            pointer = f"[json-pointer:/blocks/{index}]"
            messages = [f"[ERROR] {problem} {pointer}" for problem in problems]
            raise SlackApiFailure("invalid_blocks", messages=messages)
        block.setdefault("block_id", Ids.new("", 5))
        for element in elements_of(block):
            if element.get("type") in _INTERACTIVE:
                element.setdefault("action_id", Ids.new("", 5))
        out.append(block)
    return tuple(out)


MAX_BLOCK_TEXT = 12_000
"""The most text a message's blocks may hold together, past which Slack answers
``msg_blocks_too_long`` though each block is within its own limit. Slack does not document
this limit; 12,000 characters is about where it refuses."""


def block_text_length(value: object) -> int:
    """How much text Block Kit ``value`` holds: every ``text`` string in it, added up."""
    if isinstance(value, list | tuple):
        return sum(block_text_length(v) for v in value)
    if isinstance(value, dict):
        own = len(value["text"]) if isinstance(value.get("text"), str) else 0
        return own + sum(block_text_length(v) for v in value.values())
    return 0


def elements_of(block: Mapping[str, object]) -> Iterator[JsonObject]:
    """The interactive elements of a block: actions' elements, an accessory, an input's element."""
    elements = block.get("elements")
    if block.get("type") == "actions" and isinstance(elements, list):
        yield from (e for e in elements if isinstance(e, dict))
    for key in ("accessory", "element"):
        value = block.get(key)
        if isinstance(value, dict):
            yield value


def find_element(
    blocks: tuple[JsonObject, ...] | list[JsonObject], *, action_id: str, block_id: str | None
) -> tuple[JsonObject, JsonObject] | None:
    """The (block, element) a user clicked, by action_id and optionally block_id."""
    for block in blocks:
        if block_id is not None and block.get("block_id") != block_id:
            continue
        for element in elements_of(block):
            if element.get("action_id") == action_id:
                return block, element
    return None


def options_of(element: JsonObject) -> list[JsonObject]:
    """Every option of a select or radio group, including those inside option groups."""
    groups = [element, *(element.get("option_groups") or [])]
    return [o for g in groups for o in g.get("options") or [] if isinstance(o, dict)]


def checked_view(raw: object) -> JsonObject:
    """Validate a modal or Home tab view as `views.*` do; returns it with ids filled in."""
    if not isinstance(raw, dict) or raw.get("type") not in ("modal", "home"):
        raise SlackApiFailure("invalid_arguments")
    view = dict(raw)
    for key in ("title", "submit", "close"):
        if len(_text_of(view.get(key))) > 24:
            raise SlackApiFailure("invalid_arguments")
    if view["type"] == "modal" and not _text_of(view.get("title")):
        raise SlackApiFailure("invalid_arguments")
    if len(str(view.get("private_metadata") or "")) > 3000:
        raise SlackApiFailure("invalid_arguments")
    if len(str(view.get("callback_id") or "")) > 255:
        raise SlackApiFailure("invalid_arguments")
    view["blocks"] = list(checked_blocks(view.get("blocks") or [], surface=view["type"]))
    return view
