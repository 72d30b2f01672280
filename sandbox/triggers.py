"""Trigger ids: issued with each interaction, single use, valid for a few seconds."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .errors import SlackApiFailure
from .ids import Ids


@dataclass(frozen=True, kw_only=True)
class _Trigger:
    user: str
    issued: float


class Triggers:
    """Issues trigger ids and redeems each once within `ttl` seconds, as `views.open` does."""

    def __init__(self, *, ttl: float) -> None:
        self._ttl = ttl
        self._live: dict[str, _Trigger] = {}
        self._spent: set[str] = set()

    def issue(self, user_id: str) -> str:
        trigger_id = Ids.trigger_id()
        self._live[trigger_id] = _Trigger(user=user_id, issued=time.monotonic())
        return trigger_id

    def redeem(self, trigger_id: str) -> str:
        """The user the trigger belongs to; `expired_trigger_id` when old or already used."""
        self._forget_expired()
        if trigger_id in self._spent:
            raise SlackApiFailure("expired_trigger_id")
        trigger = self._live.pop(trigger_id, None)
        if trigger is None:
            raise SlackApiFailure("invalid_trigger_id")
        self._spent.add(trigger_id)
        if time.monotonic() - trigger.issued > self._ttl:
            raise SlackApiFailure("expired_trigger_id")
        return trigger.user

    def _forget_expired(self) -> None:
        # Expired ids move to the spent set so they still answer expired, not invalid.
        now = time.monotonic()
        for trigger_id, trigger in list(self._live.items()):
            if now - trigger.issued > self._ttl:
                del self._live[trigger_id]
                self._spent.add(trigger_id)
