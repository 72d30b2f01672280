"""The ``signoff`` console script: ``signoff gate`` for jobs, every other command the bot's."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bot.process import cli as bot_cli

from . import gate


def main(argv: Sequence[str] | None = None) -> int:
    """``signoff gate ...`` runs the gate; anything else goes to the bot's command line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["gate"]:
        return gate.main(args[1:])
    return bot_cli.main(args)
