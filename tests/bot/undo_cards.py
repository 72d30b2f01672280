"""An undo window, and a card's headline as it reads now (held, reopened or final); shared
by the undo window test files."""

from __future__ import annotations

from datetime import timedelta

from harness import Harness, card_now

WINDOW = timedelta(seconds=60)
"""How long a deciding click is held, undoable, before it takes effect."""


def headline(bot: Harness) -> str:
    """The card's first line as it reads now ("Approved, not yet final: delete_files")."""
    return str(card_now(bot)["blocks"][0]["text"]["text"])
