"""The conversation a run keeps: messages and the tool calls a model asks for."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

JSONValue: TypeAlias = Any
"""A value that survives ``json.dumps``/``json.loads`` unchanged."""

Role = Literal["system", "user", "assistant", "tool"]


def new_id(prefix: str) -> str:
    """A fresh random id such as ``call_3f2a...``, unique across processes."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A model's request to run one tool; hooks may change ``args`` in place."""

    id: str = ""
    name: str
    args: dict[str, JSONValue] = field(default_factory=dict)

    def to_dict(self) -> dict[str, JSONValue]:
        return {"id": self.id, "name": self.name, "args": self.args}

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data["name"]), args=dict(data.get("args") or {}))


@dataclass(frozen=True, kw_only=True)
class Message:
    """One entry of the conversation; tool results answer a call by ``tool_call_id``."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False

    def to_dict(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.is_error:
            data["is_error"] = True
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Message:
        return cls(
            role=cast(Role, data["role"]),
            content=str(data.get("content") or ""),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            is_error=bool(data.get("is_error", False)),
        )


def args_digest(args: Mapping[str, JSONValue]) -> str:
    """A stable fingerprint of tool arguments: equal for equal JSON, whatever the key order."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
