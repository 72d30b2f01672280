"""Checking an approver's edit against an adapted tool's JSON Schema before it is recorded
(one given as a pydantic type: ``agent_runtime.edit_checks``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from agent_runtime.edit_checks import first_argument
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
            argument=first_argument(path),
            problem=error.message,
        )
