"""Checking an approver's edit against a pydantic input type before it is recorded: a card
must not read "Approved with edits" for arguments the tool or node then refuses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic

from .errors import EditRefusedError


def check_model(name: str, adapter: pydantic.TypeAdapter[Any], value: object) -> None:
    """EditRefusedError saying what of ``value`` does not fit the input type of ``name``."""
    try:
        adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        problems = exc.errors()
        said = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in problems)
        raise EditRefusedError(
            f"invalid input for {name}: {said}",
            argument=first_argument(problems[0]["loc"]),
            problem=problems[0]["msg"],
        ) from exc


def first_argument(path: Sequence[object]) -> str | None:
    """The argument a problem's ``path`` starts at (None: the arguments as a whole)."""
    return path[0] if path and isinstance(path[0], str) else None
