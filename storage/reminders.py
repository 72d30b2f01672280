"""Moving a reminder: one taken when nobody could read it is handed out again later."""

from __future__ import annotations

import logging
from datetime import datetime

from .client import RedisClient
from .epoch import to_ms
from .keys import Keys

log = logging.getLogger(__name__)


class ReminderStore:
    """Reschedules reminders handed out by ``InterruptStore.due_reminders``."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def defer(self, record_id: str, number: int, *, until: datetime) -> bool:
        """Hand reminder ``number`` of ``record_id`` out again at ``until`` instead of now.

        False (nothing changed) when the record was decided, a later reminder was already
        taken, or ``until`` is past its expiry.
        """
        keys = [
            self._keys.record(record_id),
            self._keys.reminders(self._keys.shard_of_record(record_id)),
        ]
        args: list[str | int] = [record_id, number, to_ms(until)]
        deferred = await self._client.eval("remind_defer", keys, args) == "deferred"
        if deferred:
            log.info("reminder %d of %s moved to %s", number, record_id, until.isoformat())
        return deferred
