"""One person's vote on an interrupt, kept in its record: read back from Redis, so checked
to be a decision the runtime understands."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from agent_runtime.errors import AgentRuntimeError
from agent_runtime.interrupts import Decision


class Vote(BaseModel):
    """One person's decision on an interrupt, as recorded (an approval may await quorum)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    decision: dict[str, Any]
    at: datetime

    @field_validator("decision")
    @classmethod
    def _decision(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            Decision.from_dict(value)
        except AgentRuntimeError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @property
    def as_decision(self) -> Decision:
        return Decision.from_dict(self.decision)
