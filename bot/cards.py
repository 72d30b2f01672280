"""What a Slack message about one interrupt shows: the data the Block Kit builders render.

Built from the stored interrupt record, never from a Slack payload, so everything here is
either the bot's own data or agent text that the builders escape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agent_runtime.interrupts import DecisionType
from agent_runtime.messages import JSONValue

Outcome = Literal["approved", "denied", "edited", "responded", "expired", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class Card:
    """One interrupt as the approvers see it while it waits for a decision."""

    interrupt_id: str
    agent: str
    action: str
    description: str | None = None
    reason: str | None = None
    args: Mapping[str, JSONValue] | None = None
    requested_by: str | None = None
    expires_at: datetime | None = None
    decisions: tuple[DecisionType, ...] = ("approve", "reject")
    trust_label: str | None = None
    dangerous: bool = False
    min_approvals: int = 1
    approvals: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """How an interrupt ended: the outcome, who decided (None when the clock did), when."""

    outcome: Outcome
    at: datetime
    by: tuple[str, ...] = ()
    message: str | None = None
    args: Mapping[str, JSONValue] | None = None
