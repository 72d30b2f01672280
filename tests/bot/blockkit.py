"""A checker for the Block Kit limits in SLACK.md, used on everything the bot builds."""

from __future__ import annotations

from typing import Any

LIMITS = {
    "message_blocks": 50,
    "modal_blocks": 100,
    "section_text": 3000,
    "section_fields": 10,
    "header_text": 150,
    "actions_elements": 25,
    "context_elements": 10,
    "button_text": 75,
    "button_value": 2000,
    "id": 255,
    "confirm_title": 100,
    "confirm_text": 300,
    "confirm_button": 30,
    "modal_title": 24,
    "private_metadata": 3000,
    "option_text": 75,
    "option_value": 150,
    "overflow_options": 5,
    "checkbox_options": 10,
    "select_options": 100,
    "option_groups": 100,
    "placeholder": 150,
}


class LimitError(AssertionError):
    pass


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise LimitError(what)


def _text(obj: Any, limit: int, where: str, *, kinds: tuple[str, ...] = ("plain_text", "mrkdwn")):
    _check(isinstance(obj, dict), f"{where}: text object expected")
    _check(obj.get("type") in kinds, f"{where}: type {obj.get('type')!r} not in {kinds}")
    text = obj.get("text")
    ok = isinstance(text, str) and 0 < len(text) <= limit
    _check(ok, f"{where}: length {len(text or '')} > {limit}")
    if obj["type"] == "mrkdwn":
        _check(obj.get("verbatim") is True, f"{where}: mrkdwn without verbatim")


def _confirm(c: dict[str, Any], where: str) -> None:
    _text(c["title"], LIMITS["confirm_title"], where + ".title", kinds=("plain_text",))
    _text(c["text"], LIMITS["confirm_text"], where + ".text")
    _text(c["confirm"], LIMITS["confirm_button"], where + ".confirm", kinds=("plain_text",))
    _text(c["deny"], LIMITS["confirm_button"], where + ".deny", kinds=("plain_text",))


def _options(options: list[dict[str, Any]], most: int, where: str) -> None:
    _check(0 < len(options) <= most, f"{where}: {len(options)} options")
    for n, option in enumerate(options):
        _text(option["text"], LIMITS["option_text"], f"{where}.options[{n}]", kinds=("plain_text",))
        _check(0 < len(option["value"]) <= LIMITS["option_value"], f"{where}.options[{n}]")


def _element(e: dict[str, Any], where: str) -> None:
    if "action_id" in e:
        _check(0 < len(e["action_id"]) <= LIMITS["id"], f"{where}: action_id")
    if e["type"] == "button":
        _text(e["text"], LIMITS["button_text"], where + ".text", kinds=("plain_text",))
        _check(len(e.get("value", "")) <= LIMITS["button_value"], f"{where}: value")
        _check(e.get("style") in (None, "primary", "danger"), f"{where}: style")
        if "confirm" in e:
            _confirm(e["confirm"], where + ".confirm")
    elif e["type"] == "plain_text_input":
        _check(len(e.get("initial_value", "")) <= e.get("max_length", 3000), f"{where}: initial")
        _check(e.get("max_length", 3000) <= 3000, f"{where}: max_length")
    elif e["type"] in ("overflow", "static_select"):
        most = LIMITS["overflow_options" if e["type"] == "overflow" else "select_options"]
        groups = e.get("option_groups") if e["type"] == "static_select" else None
        if groups is not None:
            _check("options" not in e, f"{where}: options and option_groups")
            _check(0 < len(groups) <= LIMITS["option_groups"], f"{where}: {len(groups)} groups")
            for n, group in enumerate(groups):
                _text(group["label"], LIMITS["option_text"], f"{where}.option_groups[{n}].label")
                _options(group["options"], most, f"{where}.option_groups[{n}]")
        else:
            _options(e["options"], most, where)
        shown = [o for g in groups or [e] for o in g["options"]]
        _check(
            e.get("initial_option", shown[0]) in shown,
            f"{where}: initial_option must be among the options",
        )
        if "placeholder" in e:
            _text(
                e["placeholder"],
                LIMITS["placeholder"],
                where + ".placeholder",
                kinds=("plain_text",),
            )
        if "confirm" in e:
            _confirm(e["confirm"], where + ".confirm")
    elif e["type"] == "checkboxes":
        _check(0 < len(e["options"]) <= LIMITS["checkbox_options"], f"{where}: options")
        for n, option in enumerate(e["options"]):
            _text(option["text"], LIMITS["option_text"], f"{where}.options[{n}]")
            _check(0 < len(option["value"]) <= LIMITS["option_value"], f"{where}.options[{n}]")
        _check(
            all(o in e["options"] for o in e.get("initial_options", [])),
            f"{where}: initial_options must be among the options",
        )
    else:
        raise LimitError(f"{where}: unexpected element {e['type']}")


def check_blocks(blocks: list[dict[str, Any]], *, max_blocks: int) -> None:
    _check(0 < len(blocks) <= max_blocks, f"{len(blocks)} blocks > {max_blocks}")
    seen_ids: set[str] = set()
    for i, b in enumerate(blocks):
        where = f"blocks[{i}]"
        if "block_id" in b:
            _check(0 < len(b["block_id"]) <= LIMITS["id"], f"{where}: block_id")
            _check(b["block_id"] not in seen_ids, f"{where}: duplicate block_id")
            seen_ids.add(b["block_id"])
        kind = b["type"]
        if kind == "header":
            _text(b["text"], LIMITS["header_text"], where, kinds=("plain_text",))
        elif kind == "section":
            _text(b["text"], LIMITS["section_text"], where)
            _check(len(b.get("fields", [])) <= LIMITS["section_fields"], f"{where}: fields")
        elif kind == "context":
            els = b["elements"]
            _check(0 < len(els) <= LIMITS["context_elements"], f"{where}: context elements")
            for j, e in enumerate(els):
                _text(e, LIMITS["section_text"], f"{where}.elements[{j}]")
        elif kind == "actions":
            els = b["elements"]
            _check(0 < len(els) <= LIMITS["actions_elements"], f"{where}: actions elements")
            ids = [e["action_id"] for e in els]
            _check(len(set(ids)) == len(ids), f"{where}: duplicate action_id")
            for j, e in enumerate(els):
                _element(e, f"{where}.elements[{j}]")
        elif kind == "input":
            _text(b["label"], 2000, where + ".label", kinds=("plain_text",))
            _element(b["element"], where + ".element")
        else:
            raise LimitError(f"{where}: unexpected block type {kind}")


def check_message(text: str, blocks: list[dict[str, Any]]) -> None:
    _check(0 < len(text) <= 40000, "fallback text length")
    check_blocks(blocks, max_blocks=LIMITS["message_blocks"])


def check_modal(view: dict[str, Any]) -> None:
    _check(view["type"] == "modal", "modal type")
    _check(0 < len(view["callback_id"]) <= LIMITS["id"], "callback_id")
    _check(len(view.get("private_metadata", "")) <= LIMITS["private_metadata"], "metadata")
    for key in ("title", "submit", "close"):
        if key in view:
            _text(view[key], LIMITS["modal_title"], key, kinds=("plain_text",))
    check_blocks(view["blocks"], max_blocks=LIMITS["modal_blocks"])
