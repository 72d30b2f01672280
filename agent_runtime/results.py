"""What a tool call and a whole run produce: plain, serialisable data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from .interrupts import Interrupt
from .messages import JSONValue

StopReason = Literal["end_turn", "interrupt", "cancelled", "max_steps", "error"]


def json_safe(value: object) -> JSONValue:
    """``value`` as JSON a checkpoint can keep, as the model reads it: what has no JSON
    form (a datetime, a model) as its text, and so a number that is not finite ("NaN",
    "Infinity"), its place in the whole kept (an approval's arguments stay an object). A
    tool's return value goes through this before anything is saved."""
    return cast(JSONValue, json.loads(json.dumps(value, default=str), parse_constant=str))


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """A tool's output as the model will see it; ``is_error`` marks failures and refusals."""

    content: JSONValue
    is_error: bool = False

    def as_text(self) -> str:
        """The content as the text of a tool message."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, ensure_ascii=False, default=str)

    def to_dict(self) -> dict[str, JSONValue]:
        return {"content": self.content, "is_error": self.is_error}

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> ToolResult:
        return cls(content=data.get("content"), is_error=bool(data.get("is_error", False)))


@dataclass(frozen=True, kw_only=True)
class AgentResult:
    """How a run ended: why it stopped, its last message and any interrupts awaiting a human."""

    stop_reason: StopReason
    message: str
    thread_id: str
    run_id: str
    interrupts: tuple[Interrupt, ...] = ()

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "stop_reason": self.stop_reason,
            "message": self.message,
            "thread_id": self.thread_id,
            "run_id": self.run_id,
            "interrupts": [i.to_dict() for i in self.interrupts],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> AgentResult:
        return cls(
            stop_reason=data["stop_reason"],
            message=str(data["message"]),
            thread_id=str(data["thread_id"]),
            run_id=str(data["run_id"]),
            interrupts=tuple(Interrupt.from_dict(i) for i in data.get("interrupts") or ()),
        )
