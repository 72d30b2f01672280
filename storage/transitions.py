"""How a change of one interrupt record runs: one Lua script over the record's keys and
the indexes it touches, alone or many in one pipeline, its reply read back as a record."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import cast

from .client import RedisClient
from .errors import CorruptRecordError, StorageResponseError
from .ids import split_record_id
from .keys import Keys
from .queries import InterruptQueries, parse_flat
from .records import InterruptRecord
from .retention import Retention

log = logging.getLogger(__name__)


class RecordTransitions:
    """Runs the transition scripts; ``InterruptStore`` names what each one does."""

    def __init__(
        self, client: RedisClient, keys: Keys, retention: Retention, queries: InterruptQueries
    ) -> None:
        self._client = client
        self._keys = keys
        self._retention = retention
        self._queries = queries

    def _transition_keys(self, rid: str) -> list[str]:
        run_id, _ = split_record_id(rid)
        k = self._keys
        shard = k.shard_of(run_id)
        return [
            k.record(rid),
            k.run_pending(run_id),
            k.run_round(run_id),
            k.due(shard),
            k.reminders(shard),
            k.outbox(shard),
            k.by_user(shard),
            k.by_channel(shard),
            k.resume_stream(shard),
            k.audit_stream(shard),
            k.run_decided(run_id),
        ]

    async def _transition(
        self, name: str, rid: str, args: list[str | int], *, extra_keys: Sequence[str] = ()
    ) -> list[str]:
        keys = [*self._transition_keys(rid), *extra_keys]
        try:
            result = await self._client.eval(name, keys, [rid, *args])
        except StorageResponseError as exc:
            if "corrupt record" in str(exc) or "WRONGTYPE" in str(exc):
                raise CorruptRecordError(self._keys.record(rid), str(exc)) from exc
            raise
        return cast(list[str], result)

    def _record(self, rid: str, flat: Sequence[str]) -> InterruptRecord:
        return InterruptRecord.from_hash(self._keys.record(rid), parse_flat(flat))

    async def _pipelined(
        self, script: str, rids: list[str], args: list[str | int]
    ) -> list[list[str] | None]:
        """Run ``script`` for each record in one pipeline; None where a record is corrupt,
        ``["failed", error]`` where Redis could not run it now (a node that timed out, a
        slot being moved): that record is left where it is for the next sweep."""
        if not rids:
            return []
        calls = []
        for rid in rids:
            keys = self._transition_keys(rid)
            if script == "expire":
                run_id = split_record_id(rid)[0]
                keys += [self._keys.clicks_waiting(rid), self._keys.run_place(run_id)]
                keys += [self._keys.lost_by(rid), self._keys.request(run_id)]
                keys.append(self._keys.trust_revoked(self._keys.shard_of(run_id)))
            calls.append((keys, [rid, *args]))
        replies = await self._client.eval_each(script, calls)
        results: list[list[str] | None] = []
        for rid, reply in zip(rids, replies, strict=True):
            if isinstance(reply, Exception) and not _is_corrupt(reply):
                log.warning("%s of interrupt %s left for later: %s", script, rid, reply)
                results.append(["failed", str(reply)])
            elif isinstance(reply, Exception):
                log.error("%s", CorruptRecordError(self._keys.record(rid), str(reply)))
                results.append(None)
            else:
                results.append(cast(list[str], reply))
        return results


_DAMAGED = ("corrupt record", "WRONGTYPE", "attempt to ", "bad argument")
"""What a script's error says when its record's data is not what it reads (as decide.lua
tells them apart), rather than that Redis could not run it."""


def _is_corrupt(error: Exception) -> bool:
    """Whether a script's ``error`` is about its record, not about Redis."""
    return any(sign in str(error) for sign in _DAMAGED)
