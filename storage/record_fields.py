"""How a record's hash fields read back: its policy, validated once per distinct text,
and the fields an earlier version may have stored differently or not at all."""

from __future__ import annotations

import functools
import json

from .approvers import ApproverPolicy


@functools.lru_cache(maxsize=1024)
def stored_policy(text: str) -> ApproverPolicy:
    """A stored policy, validated once per distinct JSON text: the interrupts of one agent's
    tool share a policy (up to hundreds of ids to check), and the model is frozen, so one
    instance serves them all. Invalid text raises every time; errors are not cached."""
    return ApproverPolicy.model_validate_json(text)


def escalation_step(fields: dict[str, str]) -> int:
    """The escalation step a record's hash says it reached (records before ladders: 0/1)."""
    raw = fields.get("escalated") or "0"
    return int(raw) if raw.isdecimal() and len(raw) <= 3 else 0


def present(**fields: str) -> dict[str, str]:
    """The optional fields that are set: absent ones read as empty, and a pending record
    (hundreds of thousands of them) stays small."""
    return {name: value for name, value in fields.items() if value}


def posted_step(fields: dict[str, str]) -> int:
    """The highest escalation step whose card a record's hash says was posted (records
    kept before it was stored: one step per card kept)."""
    raw = fields.get("escalation_posted") or ""
    if raw.isdecimal() and len(raw) <= 3:
        return int(raw)
    return len(json.loads(fields.get("escalation_cards") or "[]")) + (
        1 if fields.get("escalation_ts") else 0
    )
