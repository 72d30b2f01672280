"""A deciding click held in its undo window, and the last one undone: parts of an
interrupt record, kept as fields of its Redis hash (the Lua scripts read them there)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from .epoch import from_ms, to_ms

_MODEL = ConfigDict(frozen=True, extra="forbid")


class HeldDecision(BaseModel):
    """A deciding click in its undo window: it becomes final at ``until`` unless undone."""

    model_config = _MODEL

    by: str
    at: datetime
    until: datetime
    decision: dict[str, Any]


class Undone(BaseModel):
    """Who undid whose held decision, and when (or that its trust grant's end undid it)."""

    model_config = _MODEL

    by: str
    at: datetime
    decided_by: str
    """Whose decision it was: one user id, or a quorum's approvers separated by spaces."""
    decision_type: str = ""
    """The type of the decision taken back (``approve``, ``reject``...); empty when it was
    undone before it was kept."""
    trust_grant: str = ""
    """The trust grant that made the decision taken back (``decided_by`` gave it, and did
    not click); empty for a person's decision."""
    lapsed: str = ""
    """``revoked`` or ``ended`` when nobody undid it: its trust grant was revoked, or ended,
    before the window did (``by`` is then empty)."""

    @property
    def was_approval(self) -> bool:
        return self.decision_type in ("approve", "edit")

    @property
    def deciders(self) -> tuple[str, ...]:
        return tuple(self.decided_by.split())


def held_fields(held: HeldDecision | None) -> dict[str, str]:
    if held is None:
        return {}  # absent fields read as empty: a pending record stays small
    return {
        "held_until": str(to_ms(held.until)),
        "held_by": held.by,
        "held_at": str(to_ms(held.at)),
        "held_decision": json.dumps(held.decision, separators=(",", ":")),
    }


def read_held(fields: dict[str, str]) -> HeldDecision | None:
    if not fields.get("held_until"):
        return None
    return HeldDecision(
        by=fields["held_by"],
        at=from_ms(int(fields["held_at"])),
        until=from_ms(int(fields["held_until"])),
        decision=json.loads(fields["held_decision"]),
    )


def undone_fields(undone: Undone | None) -> dict[str, str]:
    if undone is None:
        return {}
    return {
        "undone_by": undone.by,
        "undone_at": str(to_ms(undone.at)),
        "undid": undone.decided_by,
        "undone_type": undone.decision_type,
        **({"undone_trust": undone.trust_grant} if undone.trust_grant else {}),
        **({"undone_lapsed": undone.lapsed} if undone.lapsed else {}),
    }


def read_undone(fields: dict[str, str]) -> Undone | None:
    if not fields.get("undone_by") and not fields.get("undone_lapsed"):
        return None
    return Undone(
        by=fields.get("undone_by", ""),
        at=from_ms(int(fields["undone_at"])),
        decided_by=fields.get("undid", ""),
        decision_type=fields.get("undone_type", ""),
        trust_grant=fields.get("undone_trust", ""),
        lapsed=fields.get("undone_lapsed", ""),
    )
