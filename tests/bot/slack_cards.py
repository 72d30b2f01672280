"""A card as an agent's interrupt makes it, and the mrkdwn texts a message shows; shared by
the Slack message test files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.ui.blocks import date_token
from bot.ui.cards import Card

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def mrkdwn_texts(node: Any) -> list[str]:
    """Every mrkdwn text in ``node`` (blocks, a message or a view), in order."""
    if isinstance(node, dict):
        found = [node["text"]] if node.get("type") == "mrkdwn" else []
        return found + [t for v in node.values() for t in mrkdwn_texts(v)]
    if isinstance(node, list):
        return [t for v in node for t in mrkdwn_texts(v)]
    return []


def make_card(**overrides: Any) -> Card:
    """A card asking to delete two files, offering every decision; ``overrides`` its fields."""
    base: dict[str, Any] = {
        "interrupt_id": "int_" + "a" * 32,
        "agent": "cleanup",
        "action": "delete_files",
        "description": "Delete files older than 5 days",
        "reason": "disk is full",
        "args": {"paths": ["/tmp/a", "/tmp/b"]},
        "requested_by": "U123ABC",
        "if_nobody": f"If nobody decides by {date_token(NOW + timedelta(hours=4))}, it is denied",
        "decisions": ("approve", "edit", "respond", "reject"),
    }
    base.update(overrides)
    return Card(**base)
