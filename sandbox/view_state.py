"""Turn what a user typed into a modal into Slack's `view.state.values`.

The Slack client refuses to submit a modal with an empty required input; the sandbox
does the same and reports it as a field error instead of delivering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .blocks import options_of
from .entities import JsonObject
from .errors import UserActionError

Submitted = Mapping[str, Mapping[str, str | Sequence[str] | None]]
"""What the user entered: `{block_id: {action_id: text or option value(s)}}`."""


def _option(element: JsonObject, value: str) -> JsonObject:
    for option in options_of(element):
        if option.get("value") == value:
            return option
    raise UserActionError(f"{value!r} is not an option of {element.get('action_id')!r}")


def _element_state(element: JsonObject, raw: str | Sequence[str] | None) -> JsonObject:
    kind = str(element.get("type"))
    state: JsonObject = {"type": kind}
    if kind in ("static_select", "radio_buttons"):
        if isinstance(raw, str) and raw:
            state["selected_option"] = _option(element, raw)
        else:
            initial = element.get("initial_option")
            state["selected_option"] = initial if raw is None and initial else None
    elif kind in ("checkboxes", "multi_static_select"):
        values = [raw] if isinstance(raw, str) else list(raw or [])
        state["selected_options"] = [_option(element, v) for v in values]
    elif kind in ("plain_text_input", "number_input", "email_text_input", "url_text_input"):
        if raw is None:
            raw = element.get("initial_value")
        state["value"] = str(raw) if raw else None
    elif kind == "datepicker":
        picked = element.get("initial_date") if raw is None else raw
        state["selected_date"] = picked if isinstance(picked, str) and picked else None
    elif kind == "datetimepicker":
        picked = element.get("initial_date_time") if raw is None else raw
        state["selected_date_time"] = int(str(picked)) if picked not in (None, "") else None
    else:
        state["value"] = raw if isinstance(raw, str) else None
    return state


_FILLED = ("value", "selected_option", "selected_options", "selected_date", "selected_date_time")


def _is_empty(state: JsonObject) -> bool:
    return not any(state.get(key) for key in _FILLED)


def state_values(
    blocks: Sequence[JsonObject], submitted: Submitted
) -> tuple[dict[str, dict[str, JsonObject]], dict[str, str]]:
    """`(state.values, errors)`: every input block's value, and "required" errors by block_id."""
    values: dict[str, dict[str, JsonObject]] = {}
    errors: dict[str, str] = {}
    for block in blocks:
        element = block.get("element")
        if block.get("type") != "input" or not isinstance(element, dict):
            continue
        block_id = str(block["block_id"])
        action_id = str(element["action_id"])
        raw = submitted.get(block_id, {}).get(action_id)
        state = _element_state(element, raw)
        values[block_id] = {action_id: state}
        if _is_empty(state) and not block.get("optional"):
            errors[block_id] = "Please complete this required field."
        max_length = element.get("max_length")
        if isinstance(max_length, int) and len(str(state.get("value") or "")) > max_length:
            errors[block_id] = f"Please enter at most {max_length} characters."
    return values, errors


def message_state(
    blocks: Sequence[JsonObject], ticked: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, JsonObject]]:
    """A message's `state.values`: each checkbox group's ticks as the clicker left them
    (``ticked``: block_id to the ticked option values), a group not named as drawn."""
    values: dict[str, dict[str, JsonObject]] = {}
    for block in blocks:
        for element in block.get("elements") or []:
            if not isinstance(element, dict) or element.get("type") != "checkboxes":
                continue
            block_id, action_id = str(block.get("block_id")), str(element["action_id"])
            drawn = [str(o["value"]) for o in element.get("initial_options") or []]
            values[block_id] = {action_id: _element_state(element, ticked.get(block_id, drawn))}
    return values
