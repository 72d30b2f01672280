"""Interrupts: a run's request for a human decision, and the answers that resume it.

An interrupt's id is derived from the id of what raised it (a tool call, a workflow node)
and the interrupt's name, so a replayed tool or hook finds its stored answer instead of
asking again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, cast, get_args

from .errors import ResumeError
from .messages import JSONValue, ToolCall

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[DecisionType, ...] = get_args(DecisionType)
RememberScope = Literal["run", "thread", "minutes"]

_NAMESPACE = uuid.UUID("6f1c9a52-3d4e-4b8a-9c41-5e2f7a0b1d93")


def interrupt_id(source_id: str, name: str) -> str:
    """The stable id of interrupt ``name`` raised by ``source_id`` (a tool call or node)."""
    return "int_" + uuid.uuid5(_NAMESPACE, f"{source_id}\x00{name}").hex


@dataclass(frozen=True, kw_only=True)
class Remember:
    """How long a decision stands for later calls of the same tool.

    ``run``: the rest of this run; ``thread``: every later run of the thread; ``minutes``:
    the next ``minutes`` minutes. With ``same_args`` only calls with identical arguments
    are covered.
    """

    scope: RememberScope
    minutes: int | None = None
    same_args: bool = False

    def __post_init__(self) -> None:
        if self.scope not in get_args(RememberScope):
            raise ResumeError(f"unknown remember scope {self.scope!r}; use run, thread or minutes")
        if (self.scope == "minutes") != (self.minutes is not None):
            raise ResumeError("remember: give minutes exactly when the scope is 'minutes'")
        if self.minutes is not None and self.minutes <= 0:
            raise ResumeError("remember: minutes must be positive")

    def to_dict(self) -> dict[str, JSONValue]:
        return {"scope": self.scope, "minutes": self.minutes, "same_args": self.same_args}

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Remember:
        return cls(
            scope=cast(RememberScope, data.get("scope")),
            minutes=data.get("minutes"),
            same_args=bool(data.get("same_args", False)),
        )


@dataclass(frozen=True, kw_only=True)
class Decision:
    """A human's answer to an approval: approve, edit the arguments, reject, or respond."""

    type: DecisionType
    args: dict[str, JSONValue] | None = None
    message: str | None = None
    remember: Remember | None = None

    def __post_init__(self) -> None:
        if self.type not in DECISION_TYPES:
            raise ResumeError(f"unknown decision {self.type!r}; use one of {DECISION_TYPES}")
        if self.type == "edit" and not isinstance(self.args, dict):
            raise ResumeError("an edit decision needs the new arguments as a dict")
        if self.type == "respond" and not isinstance(self.message, str):
            raise ResumeError("a respond decision needs the human's message")

    @classmethod
    def approve(cls, *, remember: Remember | None = None) -> Decision:
        return cls(type="approve", remember=remember)

    @classmethod
    def edit(cls, args: dict[str, JSONValue], *, remember: Remember | None = None) -> Decision:
        return cls(type="edit", args=args, remember=remember)

    @classmethod
    def reject(cls, message: str = "", *, remember: Remember | None = None) -> Decision:
        return cls(type="reject", message=message, remember=remember)

    @classmethod
    def respond(cls, message: str, *, remember: Remember | None = None) -> Decision:
        return cls(type="respond", message=message, remember=remember)

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "type": self.type,
            "args": self.args,
            "message": self.message,
            "remember": self.remember.to_dict() if self.remember else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Decision:
        if not isinstance(data, Mapping) or "type" not in data:
            raise ResumeError(f"a decision must be an object with a 'type', got {data!r}")
        remember = data.get("remember")
        return cls(
            type=cast(DecisionType, data["type"]),
            args=data.get("args"),
            message=data.get("message"),
            remember=Remember.from_dict(remember) if isinstance(remember, Mapping) else None,
        )


@dataclass(frozen=True, kw_only=True)
class Interrupt:
    """A pending request for a human: what asks, why, and which decisions are offered.

    A ``question`` wants the human's words or one of ``options`` (a string) as its answer;
    any other interrupt is answered with a ``Decision``.
    """

    id: str
    name: str
    reason: JSONValue = None
    tool_call: ToolCall | None = None
    allowed_decisions: tuple[DecisionType, ...] = ()
    description: str | None = None
    question: bool = False
    options: tuple[str, ...] = ()
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def is_approval(self) -> bool:
        """True when the answer must be a ``Decision`` rather than a free-form response."""
        return bool(self.allowed_decisions)

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "id": self.id,
            "name": self.name,
            "reason": self.reason,
            "tool_call": self.tool_call.to_dict() if self.tool_call else None,
            "allowed_decisions": list(self.allowed_decisions),
            "description": self.description,
            "question": self.question,
            "options": list(self.options),
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Interrupt:
        tool_call = data.get("tool_call")
        return cls(
            id=str(data["id"]),
            name=str(data["name"]),
            reason=data.get("reason"),
            tool_call=ToolCall.from_dict(tool_call) if tool_call else None,
            allowed_decisions=tuple(data.get("allowed_decisions") or ()),
            description=data.get("description"),
            question=bool(data.get("question", False)),
            options=tuple(str(o) for o in data.get("options") or ()),
            created_at=datetime.fromisoformat(str(data["created_at"])),
        )


_NO_RESPONSE: JSONValue = object()


@dataclass(frozen=True, kw_only=True, init=False)
class InterruptResponse:
    """The answer to one interrupt: a free-form ``response`` or an approval ``decision``.

    ``metadata`` travels with it to the resumed code (who answered, from where).
    """

    interrupt_id: str
    response: JSONValue
    decision: Decision | None
    metadata: dict[str, JSONValue]

    def __init__(
        self,
        *,
        interrupt_id: str,
        response: JSONValue = _NO_RESPONSE,
        decision: Decision | None = None,
        metadata: dict[str, JSONValue] | None = None,
    ) -> None:
        if not isinstance(interrupt_id, str) or not interrupt_id:
            raise ResumeError(f"an interrupt response needs an interrupt_id, got {interrupt_id!r}")
        if (response is _NO_RESPONSE) == (decision is None):
            raise ResumeError(
                f"response to {interrupt_id}: give exactly one of response= or decision="
            )
        object.__setattr__(self, "interrupt_id", interrupt_id)
        object.__setattr__(self, "response", None if response is _NO_RESPONSE else response)
        object.__setattr__(self, "decision", decision)
        object.__setattr__(self, "metadata", dict(metadata or {}))

    @property
    def value(self) -> JSONValue:
        """What ``interrupt()`` returns on resume: the decision, or the free-form response."""
        return self.decision if self.decision is not None else self.response

    def to_dict(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {"interrupt_id": self.interrupt_id, "metadata": self.metadata}
        if self.decision is not None:
            data["decision"] = self.decision.to_dict()
        else:
            data["response"] = self.response
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> InterruptResponse:
        if not isinstance(data, Mapping):
            raise ResumeError(f"an interrupt response must be an object, got {data!r}")
        metadata = data.get("metadata")
        if "decision" in data and data["decision"] is not None:
            return cls(
                interrupt_id=data.get("interrupt_id"),  # type: ignore[arg-type]
                decision=Decision.from_dict(data["decision"]),
                metadata=metadata if isinstance(metadata, dict) else None,
            )
        return cls(
            interrupt_id=data.get("interrupt_id"),  # type: ignore[arg-type]
            response=data.get("response"),
            metadata=metadata if isinstance(metadata, dict) else None,
        )


class InterruptRequested(Exception):
    """Raised by ``interrupt()`` when no answer is stored yet; the run stops and asks."""

    def __init__(self, interrupt: Interrupt) -> None:
        super().__init__(f"interrupt {interrupt.name!r} ({interrupt.id}) awaits a human")
        self.interrupt = interrupt
