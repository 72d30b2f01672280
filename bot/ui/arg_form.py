"""The Edit modal as a form generated from the arguments' JSON schema.

One input per argument, the Block Kit element that fits its type: text, a number input,
a checkbox, a select for an enum (typed when Slack cannot list it), one line per item for
a list of strings, date and date time pickers, email and URL inputs; raw JSON only for
shapes a form cannot show. What comes back is read into arguments, and every problem is a
sentence for its field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal, cast

from agent_runtime.messages import JSONValue

from .arg_choices import Choice, allowed, choices_of, listable, select, typed_hint
from .blocks import Block, plain_text
from .schema_refs import resolved

Kind = Literal[
    "text",
    "integer",
    "number",
    "boolean",
    "choice",
    "date",
    "datetime",
    "email",
    "url",
    "lines",
    "json",
]
BLOCK_PREFIX = "arg."
ACTION = "value"
MAX_FIELDS = 40
"""More arguments than this are edited as JSON (a modal holds 100 blocks)."""
_LABEL = 2000


@dataclass(frozen=True, kw_only=True)
class Field:
    """One argument as the form shows it."""

    name: str
    kind: Kind
    required: bool
    options: tuple[Choice, ...] = ()
    """A choice's allowed values (strings, or integers), each once, in the schema's order."""
    description: str | None = None
    format: str | None = None
    """The schema's ``format`` of the value (or of a list's items): names the expected form."""
    default: JSONValue = None
    """The schema's default: shown for an argument the call leaves out, as it will run."""

    @property
    def block_id(self) -> str:
        return BLOCK_PREFIX + self.name


def fields_of(schema: Mapping[str, Any]) -> list[Field] | None:
    """The form's fields for an object schema, or None when a form cannot show it."""
    root, schema = schema, resolved(schema, schema)
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, Mapping):
        return None
    if not properties or len(properties) > MAX_FIELDS:
        return None
    required = set(schema.get("required") or ())
    fields = []
    for name, prop in properties.items():
        if not isinstance(prop, Mapping) or len(BLOCK_PREFIX + name) > 255:
            return None
        prop = resolved(prop, root)
        value = _unwrap_optional(prop, root)
        if isinstance(value.get("items"), Mapping):
            value = {**value, "items": resolved(value["items"], root)}
        fields.append(
            Field(
                name=name,
                kind=_kind(value),
                required=name in required,
                options=choices_of(value.get("enum")),
                description=prop.get("description") or value.get("description"),
                format=value.get("format") or (value.get("items") or {}).get("format"),
                default=prop.get("default"),
            )
        )
    return fields


def form_blocks(fields: Sequence[Field], args: Mapping[str, JSONValue]) -> list[Block]:
    """An input block per field, filled with the arguments as they will run (a default
    for one the call leaves out).

    An argument the call gives but the input shows empty (an empty string, a null) is
    optional: Slack submits no form with an empty required input, and left empty it is
    kept as it was (``read_args``)."""
    blocks = []
    for field in fields:
        block = _input(field, _value(field, args))
        if field.name in args and not any(k.startswith("initial_") for k in block["element"]):
            block["optional"] = True
        blocks.append(block)
    return blocks


def _value(field: Field, args: Mapping[str, JSONValue]) -> JSONValue:
    return args.get(field.name, field.default)


def read_args(
    fields: Sequence[Field],
    values: Mapping[str, Mapping[str, Mapping[str, Any]]],
    shown: Mapping[str, JSONValue],
) -> tuple[dict[str, JSONValue], dict[str, str]]:
    """The arguments the form was submitted with, and a sentence per field that is wrong.

    A field submitted as the form showed it keeps the value ``shown`` exactly (or stays
    absent): an empty string, a null, a long number, a list's items or a flag left to its
    default are not read back through the form's text."""
    args: dict[str, JSONValue] = {}
    errors: dict[str, str] = {}
    for field in fields:
        state = values.get(field.block_id, {}).get(ACTION, {})
        if _unchanged(field, _input(field, _value(field, shown))["element"], state):
            if field.name in shown:
                args[field.name] = shown[field.name]
            elif field.required:
                errors[field.block_id] = "This is required."
            continue
        try:
            value = _read(field, state)
        except ValueError as exc:
            errors[field.block_id] = str(exc)
            continue
        if value is None:
            if field.required:
                errors[field.block_id] = "This is required."
            continue
        args[field.name] = value
    return args, errors


def field_errors(problems: Sequence[Mapping[str, Any]], fields: Sequence[Field]) -> dict[str, str]:
    """pydantic's validation errors as one sentence per field (never a raw pattern)."""
    by_name = {f.name: f for f in fields}
    errors: dict[str, str] = {}
    for problem in problems:
        loc: Sequence[Any] = problem.get("loc") or ()
        field = by_name.get(str(loc[0])) if loc else None
        if field is None or field.block_id in errors:
            continue
        item = f"Line {int(loc[1]) + 1}: " if field.kind == "lines" and len(loc) > 1 else ""
        errors[field.block_id] = item + _sentence(problem, field)
    return errors


def _sentence(problem: Mapping[str, Any], field: Field) -> str:
    kind, message = str(problem.get("type") or ""), str(problem.get("msg") or "")
    if kind.startswith("url_") and field.format in ("uri", "url"):
        kind = "string_pattern_mismatch"  # pydantic's own URL types (HttpUrl) say it so
    if kind == "string_pattern_mismatch" or (kind == "value_error" and field.format == "email"):
        if field.format == "email":
            return "This must be an email address like name@example.com."
        if field.format in ("uri", "url"):
            return "This must be a web address like https://example.com."
        return "This is not in the form expected" + (
            f": {field.description}." if field.description else "."
        )
    if kind == "missing":
        return "This is required."
    if kind == "value_error":
        return message.removeprefix("Value error, ").rstrip(".") + "."
    return (
        message.replace("Input should be", "This should be")
        .replace("String should", "This should")
        .replace("List should", "This should")
        .rstrip(".")
        + "."
    )


def _unwrap_optional(prop: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``X | None`` (pydantic's ``anyOf`` with null) as ``X``."""
    variants = prop.get("anyOf")
    if isinstance(variants, list):
        variants = [resolved(v, root) for v in variants if isinstance(v, Mapping)]
        real = [v for v in variants if v.get("type") != "null"]
        if len(real) == 1:
            return {**real[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


_STRING_KINDS: dict[str, Kind] = {
    "date": "date",
    "date-time": "datetime",
    "email": "email",
    "uri": "url",
}


def _kind(prop: Mapping[str, Any]) -> Kind:
    kind, fmt = prop.get("type"), prop.get("format")
    if choices_of(prop.get("enum")):
        return "choice"
    if kind == "string":
        return _STRING_KINDS.get(str(fmt), "text")
    if kind == "integer":
        return "integer"
    if kind == "number":
        return "number"
    if kind == "boolean":
        return "boolean"
    items = prop.get("items")
    if kind == "array" and isinstance(items, Mapping) and items.get("type") == "string":
        return "lines"
    return "json"


def _input(field: Field, value: JSONValue) -> Block:
    element: dict[str, Any] = {"action_id": ACTION}
    label = field.name.replace("_", " ")
    hint = field.description
    if field.kind == "choice" and listable(field.options):
        element |= select(field.options, value)
    elif field.kind in ("text", "email", "url", "choice"):
        element["type"] = {"email": "email_text_input", "url": "url_text_input"}.get(
            field.kind, "plain_text_input"
        )
        text = "" if value is None else str(value)
        if field.kind in ("text", "choice"):
            element["multiline"] = "\n" in text or len(text) > 80
        if text:
            element["initial_value"] = text
        if field.kind == "choice":
            hint = typed_hint(field.options) + (f" {hint}" if hint else "")
    elif field.kind in ("integer", "number"):
        element |= {"type": "number_input", "is_decimal_allowed": field.kind == "number"}
        if isinstance(value, int | float) and not isinstance(value, bool):
            element["initial_value"] = str(value)
    elif field.kind == "boolean":
        option = {"text": plain_text(f"Yes, {label}", 75), "value": "true"}
        element |= {"type": "checkboxes", "options": [option]}
        if value is True:
            element["initial_options"] = [option]
    elif field.kind == "date":
        element["type"] = "datepicker"
        if isinstance(value, str) and _is_date(value):
            element["initial_date"] = value
    elif field.kind == "datetime":
        element["type"] = "datetimepicker"
        moment = _moment(value)
        if moment is not None:
            element["initial_date_time"] = int(moment.timestamp())
    elif field.kind == "lines":
        element |= {"type": "plain_text_input", "multiline": True}
        if isinstance(value, list) and value:
            element["initial_value"] = "\n".join(str(v) for v in value)
        hint = "One per line." + (f" {hint}" if hint else "")
    else:
        element |= {"type": "plain_text_input", "multiline": True}
        if value is not None:
            element["initial_value"] = json.dumps(value, indent=2, ensure_ascii=False)
        label += " (JSON)"
    block: Block = {
        "type": "input",
        "block_id": field.block_id,
        "label": plain_text(label, _LABEL),
        "element": element,
        # A checkbox left empty means false, so it never blocks the form.
        "optional": not field.required or field.kind == "boolean",
    }
    if hint:
        block["hint"] = plain_text(hint, _LABEL)
    return block


def _unchanged(field: Field, element: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    """Whether a field was submitted as its ``element`` showed it."""
    if field.kind == "boolean":
        return bool(state.get("selected_options")) == bool(element.get("initial_options"))
    if element["type"] == "static_select":
        picked = (state.get("selected_option") or {}).get("value")
        return picked == (element.get("initial_option") or {}).get("value")
    if field.kind == "date":
        return state.get("selected_date") == element.get("initial_date")
    if field.kind == "datetime":
        return state.get("selected_date_time") == element.get("initial_date_time")
    return (state.get("value") or None) == element.get("initial_value")


def _read(field: Field, state: Mapping[str, Any]) -> JSONValue:
    """One field's value, None when left empty; ValueError with a sentence when wrong."""
    if field.kind == "boolean":
        return bool(state.get("selected_options"))
    if field.kind == "choice" and listable(field.options):
        picked = (state.get("selected_option") or {}).get("value")
        return allowed(field.options, picked, typed=False) if picked else None
    if field.kind == "date":
        return state.get("selected_date") or None
    if field.kind == "datetime":
        stamp = state.get("selected_date_time")
        return None if stamp is None else datetime.fromtimestamp(int(stamp), UTC).isoformat()
    text = state.get("value")
    if text is None or not str(text).strip():
        return None
    text = str(text)
    if field.kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError("This must be a whole number, like 42.") from None
    if field.kind == "number":
        if re.fullmatch(r"\s*-?\d+\s*", text):  # whole: every digit kept, as float would not
            return int(text.strip())
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError("This must be a number, like 4.5.") from None
        if not math.isfinite(number):
            raise ValueError("This must be a number, like 4.5.")
        return int(number) if number.is_integer() and "." not in text else number
    if field.kind == "choice":
        return allowed(field.options, text, typed=True)
    if field.kind == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
    if field.kind == "json":
        try:
            parsed: JSONValue = loads_finite(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"This is not valid JSON ({exc}).") from None
        return parsed
    return text


def _is_date(value: str) -> bool:
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _moment(value: JSONValue) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def loads_finite(text: str) -> JSONValue:
    """JSON an approver typed; ValueError (JSONDecodeError when it is not JSON) for the
    ``NaN``, ``Infinity`` and too-large numbers Python reads but JSON has not."""

    def finite(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):
            raise ValueError(f"{number} is too large a number.")
        return value

    def refused(constant: str) -> float:
        raise ValueError(f"{constant} is not a JSON number.")

    return cast(JSONValue, json.loads(text, parse_float=finite, parse_constant=refused))
