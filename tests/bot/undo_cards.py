"""An undo window, and a card as it reads now (held, reopened or final); shared by the undo
window test files."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import Harness

WINDOW = timedelta(seconds=60)
"""How long a deciding click is held, undoable, before it takes effect."""


def card_now(bot: Harness) -> dict[str, Any]:
    """The card as it reads now: its last update, else as posted."""
    updates = bot.slack.called("chat.update")
    return updates[-1] if updates else bot.posted(0)


def headline(bot: Harness) -> str:
    """The card's first line as it reads now ("Approved, not yet final: delete_files")."""
    return str(card_now(bot)["blocks"][0]["text"]["text"])
