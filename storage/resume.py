"""ResumeQueue: the jobs that continue a run once its last pending interrupt is decided.

Jobs are appended by the decide/expire scripts to a Redis Stream and read through a
consumer group. A worker's loop (one per shard: ``claim(..., shard=n)``)::

    for job in await queue.claim("worker-1"):
        taken = await queue.take(job, consumer="worker-1")
        match taken.status:
            case "done": await queue.ack(job)          # applied before: nothing to do
            case "busy": continue                      # another worker holds the run
            case "go":
                ...resume the run with taken.records, save the snapshot...
                await queue.complete(job, consumer="worker-1",
                                     session_version=taken.session_version)

``take`` reads the session version and the job's records with the lease, in one round
trip (``begin`` is the same check for a caller that already knows the version).
``complete`` acknowledges only after the new snapshot is saved. While a worker applies a
job it calls ``heartbeat`` (every ``TAKEOVER_AFTER / 3``), so a job whose worker died is
picked up again by ``reclaim`` within seconds, and a live, slow worker's never is;
``begin``/``take`` make sure a job is applied at most once per run version. A resume
that raises calls ``fail``: the job is retried after the timeout, until its
``max_attempts``-th failure (or a permanent one) moves it to the dead-letter stream
(acknowledged, never retried again).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, cast

from agent_runtime.session import StoredSession

from .client import RedisClient
from .consumer_group import ConsumerGroup, stream_order
from .epoch import from_ms, to_ms
from .errors import CorruptRecordError
from .keys import Keys
from .records import InterruptRecord
from .sessions import parse_session

log = logging.getLogger(__name__)

BeginResult = Literal["go", "done", "busy"]

TAKEOVER_AFTER = timedelta(seconds=6)
"""How long a job or click may go without its consumer's heartbeat before another consumer
takes it over, and how long a run's lease outlives its holder's last heartbeat."""


@dataclass(frozen=True, kw_only=True)
class Taken:
    """What ``take`` found: go, done or busy; the version resumed from; on ``go``, the
    session as stored and the job's records (``missing``: ids gone or unreadable)."""

    status: BeginResult
    session_version: int
    session: StoredSession | None = None
    records: tuple[InterruptRecord, ...] = ()
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ResumeJob:
    """Continue run ``run_id`` (thread ``thread_id``) with the answers of ``record_ids``."""

    id: str
    run_id: str
    thread_id: str
    round: int
    record_ids: tuple[str, ...]
    enqueued_at: datetime
    shard: int = 0


@dataclass(frozen=True, kw_only=True)
class Failure:
    """What ``fail`` did: the job's failed attempts so far, and whether it was given up."""

    attempts: int
    dead: bool


class ResumeQueue:
    """A consumer group over the resume stream, with leases that keep resumes single."""

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        *,
        group: str = "resume-workers",
        lease: timedelta = TAKEOVER_AFTER,
        applied_ttl: timedelta = timedelta(days=7),
        max_attempts: int = 5,
        dead_letters: int = 10_000,
    ) -> None:
        self._client = client
        self._keys = keys
        self.group = group
        self.shard_groups = [
            ConsumerGroup(client, key=keys.resume_stream(shard), group=group, what="resume jobs")
            for shard in keys.all_shards
        ]
        self.max_attempts = max_attempts
        self._lease_ms = int(lease.total_seconds() * 1000)
        self._applied_ms = int(applied_ttl.total_seconds() * 1000)
        self._dead_letters = dead_letters

    async def ensure_group(self) -> None:
        """Create each shard's consumer group (and stream) if missing; queued jobs are kept."""
        for group in self.shard_groups:
            await group.ensure()

    async def claim(
        self, consumer: str, *, shard: int = 0, count: int = 10, block: timedelta | None = None
    ) -> list[ResumeJob]:
        """New jobs of ``shard`` for ``consumer``; waits up to ``block`` for one."""
        entries = await self.shard_groups[shard].read(consumer, count=count, block=block)
        return [_job(entry_id, fields, shard) for entry_id, fields in entries]

    async def reclaim(
        self, consumer: str, *, shard: int = 0, min_idle: timedelta, count: int = 10
    ) -> list[ResumeJob]:
        """Take over jobs of ``shard`` another consumer claimed but did not finish within
        ``min_idle``."""
        entries = await self.shard_groups[shard].take_over(consumer, min_idle=min_idle, count=count)
        jobs = [_job(entry_id, fields, shard) for entry_id, fields in entries]
        for job in jobs:
            log.warning("resume job %s of run %s reclaimed by %s", job.id, job.run_id, consumer)
        return jobs

    async def heartbeat(self, jobs: list[ResumeJob], *, consumer: str) -> int:
        """Keep ``jobs`` (being applied by ``consumer``) and their runs' leases from being
        taken over; how many were still this consumer's."""
        kept = 0
        for shard in {job.shard for job in jobs}:
            mine = [job for job in jobs if job.shard == shard]
            kept += await self.shard_groups[shard].heartbeat(
                consumer,
                [job.id for job in mine],
                leases=[self._keys.run_lease(job.run_id) for job in mine],
                lease_ms=self._lease_ms,
            )
        return kept

    async def begin(self, job: ResumeJob, *, consumer: str, session_version: int) -> BeginResult:
        """Take the run's lease to apply ``job`` to snapshot ``session_version``.

        ``done``: this job or another already resumed from that version (ack it);
        ``busy``: another consumer holds the run's lease (leave the job for later).
        """
        keys = [self._keys.run_lease(job.run_id), self._keys.run_applied(job.run_id)]
        args: list[str | int] = [job.id, session_version, consumer, self._lease_ms]
        reply = cast(list[str], await self._client.eval("resume_begin", keys, args))
        return cast(BeginResult, reply[0])

    async def take(self, job: ResumeJob, *, consumer: str) -> Taken:
        """``begin`` from the thread's stored session, reading it and the job's records too.

        One round trip instead of four (session, lease, records, the agent's own load): a
        resume's bookkeeping is most of its cost when the agent itself is quick. On Redis
        Cluster the session lives in another slot and is read first, one more round trip.
        """
        k = self._keys
        record_keys = [k.record(rid) for rid in job.record_ids]
        session_key = k.session(job.thread_id)
        keys = [k.run_lease(job.run_id), k.run_applied(job.run_id)]
        args: list[str | int] = [job.id, "", consumer, self._lease_ms, "session"]
        if k.shards is None:
            keys.append(session_key)
        else:
            async with self._client.guard("load session"):
                read = await self._client.raw.hmget(session_key, ["version", "snapshot"])
            stored, snapshot = cast(list[str | None], read)
            args[1], args[4] = stored or "0", ""
        reply = cast(list[str], await self._client.eval("resume_begin", keys + record_keys, args))
        status, version = cast(BeginResult, reply[0]), int(reply[1])
        if status != "go":
            return Taken(status=status, session_version=version)
        if k.shards is None:
            snapshot = reply[2]
        session = parse_session(session_key, version, snapshot) if snapshot else None
        records: list[InterruptRecord] = []
        missing: list[str] = []
        for rid, key, text in zip(job.record_ids, record_keys, reply[3:], strict=True):
            try:
                if not text:
                    missing.append(rid)
                    continue
                records.append(InterruptRecord.from_json(key, text))
            except CorruptRecordError as exc:
                log.error("%s", exc)
                missing.append(rid)
        return Taken(
            status=status,
            session_version=version,
            session=session,
            records=tuple(records),
            missing=tuple(missing),
        )

    async def complete(self, job: ResumeJob, *, consumer: str, session_version: int) -> None:
        """After the run's new snapshot is saved: mark the version applied, release, ack."""
        keys = [
            self._keys.run_lease(job.run_id),
            self._keys.run_applied(job.run_id),
            self._keys.resume_stream(job.shard),
        ]
        args: list[str | int] = [job.id, session_version, consumer, self.group, self._applied_ms]
        await self._client.eval("resume_complete", keys, args)
        log.info(
            "resume job %s of run %s applied from version %d", job.id, job.run_id, session_version
        )

    async def release(self, job: ResumeJob, *, consumer: str) -> None:
        """Give a job up unacknowledged (the resume failed); it is reclaimed later."""
        await self._client.eval(
            "resume_release", [self._keys.run_lease(job.run_id)], [job.id, consumer]
        )

    async def fail(
        self,
        job: ResumeJob,
        *,
        consumer: str,
        error: str,
        now: datetime,
        permanent: bool = False,
    ) -> Failure:
        """Count a failed resume and release the job; at ``max_attempts`` failures, or at
        once when ``permanent`` (no retry can succeed), move it to the dead-letter stream
        with ``error`` and acknowledge it, in the same step."""
        keys = [
            self._keys.run_lease(job.run_id),
            self._keys.run_attempts(job.run_id),
            self._keys.resume_stream(job.shard),
            self._keys.resume_dead_letters(job.shard),
        ]
        args: list[str | int] = [
            job.id,
            consumer,
            self.group,
            1 if permanent else self.max_attempts,
            self._applied_ms,
            error,
            to_ms(now),
            job.run_id,
            job.thread_id,
            " ".join(job.record_ids),
            self._dead_letters,
            secrets.token_hex(8),
        ]
        reply = cast(list[str | int], await self._client.eval("resume_fail", keys, args))
        return Failure(attempts=int(reply[1]), dead=reply[0] == "dead")

    async def first_end(self, run_id: str) -> bool:
        """True for the first caller to report ``run_id``'s end; False for any later one (a
        resume retried, or caught up, after a worker died between its post and its ack).
        The mark holds a token of this call: sent again (its reply lost), it is still first."""
        return await self._client.first_to_mark(
            self._keys.run_ended(run_id),
            keep_ms=self._applied_ms,
            action=f"mark the end of run {run_id}",
        )

    async def dead_letters(self, *, count: int = 100) -> list[dict[str, str]]:
        """The most recent dead-lettered jobs of every shard, newest first, as stored (for
        an operator)."""
        async with self._client.guard("read dead-lettered resume jobs"):
            pipe = self._client.pipeline()
            for shard in self._keys.all_shards:
                pipe.xrevrange(self._keys.resume_dead_letters(shard), count=count)
            shards = cast(list[list[tuple[str, dict[str, str]]]], await pipe.execute())
        entries = [entry for entries in shards for entry in entries]
        entries.sort(key=lambda entry: stream_order(entry[0]), reverse=True)
        return [dict(fields) for _, fields in entries[:count]]

    async def ack(self, job: ResumeJob) -> None:
        """Acknowledge a job that needs no work (``begin`` answered ``done``)."""
        await self.shard_groups[job.shard].ack(job.id)

    async def pending_count(self) -> int:
        """Jobs delivered to a consumer and not yet acknowledged."""
        async with self._client.guard("count pending resume jobs"):
            pipe = self._client.pipeline()
            for shard in self._keys.all_shards:
                pipe.xpending(self._keys.resume_stream(shard), self.group)
            return sum(int(info["pending"]) for info in await pipe.execute())

    async def lag(self) -> int:
        """Jobs not yet acknowledged: waiting for a worker, or being applied."""
        return sum(await asyncio.gather(*(group.lag() for group in self.shard_groups)))


def _job(entry_id: str, fields: dict[str, str], shard: int) -> ResumeJob:
    return ResumeJob(
        id=entry_id,
        run_id=fields["run_id"],
        thread_id=fields["thread_id"],
        round=int(fields["round"]),
        record_ids=tuple(fields.get("record_ids", "").split()),
        enqueued_at=from_ms(int(fields["at"])),
        shard=shard,
    )
