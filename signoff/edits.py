"""Checking an approver's edit against the adapted tool's input before it is recorded: a
card must not read "Approved with edits" for arguments the tool then refuses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
import pydantic

from agent_runtime.errors import EditRefusedError
from agent_runtime.messages import JSONValue


def check_schema(tool: str, schema: Mapping[str, Any], args: dict[str, JSONValue]) -> None:
    """EditRefusedError saying what of ``args`` does not fit ``tool``'s JSON Schema."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is not None:
        path = tuple(error.absolute_path)
        where = ".".join(map(str, path)) or "input"
        raise EditRefusedError(
            f"invalid input for {tool}: {where}: {error.message}",
            argument=_argument(path),
            problem=error.message,
        )


def check_model(tool: str, adapter: pydantic.TypeAdapter[Any], value: object) -> None:
    """EditRefusedError saying what of ``value`` does not fit ``tool``'s pydantic input type."""
    try:
        adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        problems = exc.errors()
        said = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in problems)
        raise EditRefusedError(
            f"invalid input for {tool}: {said}",
            argument=_argument(problems[0]["loc"]),
            problem=problems[0]["msg"],
        ) from exc


def _argument(path: Sequence[object]) -> str | None:
    """The argument a problem's ``path`` starts at (None: the arguments as a whole)."""
    return path[0] if path and isinstance(path[0], str) else None
