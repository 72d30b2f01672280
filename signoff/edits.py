"""Checking an approver's edit against the adapted tool's input before it is recorded: a
card must not read "Approved with edits" for arguments the tool then refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import pydantic

from agent_runtime.errors import ResumeError
from agent_runtime.messages import JSONValue


def check_schema(tool: str, schema: Mapping[str, Any], args: dict[str, JSONValue]) -> None:
    """ResumeError saying what of ``args`` does not fit ``tool``'s JSON Schema."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "input"
        raise ResumeError(f"invalid input for {tool}: {where}: {error.message}")


def check_model(tool: str, adapter: pydantic.TypeAdapter[Any], value: object) -> None:
    """ResumeError saying what of ``value`` does not fit ``tool``'s pydantic input type."""
    try:
        adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        said = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors()
        )
        raise ResumeError(f"invalid input for {tool}: {said}") from exc
