"""Identifiers in Slack's formats: message timestamps, object ids, trigger ids."""

from __future__ import annotations

import secrets
import string
import time

_ALPHABET = string.ascii_uppercase + string.digits


class Ids:
    """Makes Slack-shaped ids; message `ts` values are unique and strictly increasing."""

    def __init__(self) -> None:
        self._last_micros = 0

    def ts(self) -> str:
        """A message timestamp like `1732230000.000100`: seconds and six digits of micros."""
        micros = max(time.time_ns() // 1000, self._last_micros + 1)
        self._last_micros = micros
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    @staticmethod
    def new(prefix: str, length: int = 10) -> str:
        """An object id such as `V0A1B2C3D4E` (views), `D...` (DM channels), `Ev...` (events)."""
        return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))

    @staticmethod
    def trigger_id() -> str:
        """A trigger id in Slack's `seconds.team.hex` shape."""
        return f"{int(time.time())}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}"

    @staticmethod
    def token() -> str:
        """An opaque URL-safe secret for response URLs and socket tickets."""
        return secrets.token_urlsafe(18)
