"""What the command line's values mean: a port number, a moment (``--since``)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta


def _now() -> datetime:
    return datetime.now(UTC)


def port_number(text: str) -> int:
    """``--port``: a TCP port number, refused here rather than as a traceback from bind()."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")
    return port


_AGO = {"m": "minutes", "h": "hours", "d": "days"}


def moment(text: str) -> datetime:
    """``--since``: an ISO date or time (UTC unless it says), or ``30m`` / ``12h`` / ``7d`` ago."""
    amount, unit = text[:-1], text[-1:]
    if unit in _AGO and amount.isdecimal():
        try:
            return _now() - timedelta(**{_AGO[unit]: int(amount)})
        except OverflowError:
            raise argparse.ArgumentTypeError(f"{text!r} is further back than any date") from None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an ISO date or time (2026-11-24T09:00Z) nor 30m, 12h or 7d"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
