"""What a job did with its request's approval: when it started the approved command, and
how the run it reported ended, so a job retried under the same idempotency key learns
that the approval was used already instead of running the command a second time."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, cast

from .audit import AuditEntry, AuditLog
from .client import RedisClient
from .epoch import from_ms, to_ms
from .errors import CorruptRecordError
from .keys import Keys


def audit_mark(digest: str) -> str:
    """The ``append_once`` mark of report ``digest``'s audit entry (the Lua steps name it so)."""
    return f"outcome {digest}"


KEPT = timedelta(days=7)
"""How long a run's start and outcome are kept: as long as its ended request is."""


@dataclass(frozen=True, kw_only=True)
class JobRun:
    """A request's run as its job told it: when it started (None: never said), and its
    outcome report as JSON with when it was taken (None: none reported)."""

    started_at: datetime | None = None
    outcome: str | None = None
    reported_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Start:
    """A start asked for: whether it is this attempt's and when the first start was; or,
    with nothing started, the record id of the request that superseded the approval."""

    first: bool = False
    at: datetime | None = None
    superseded_by: str | None = None


class JobRuns:
    """Keeps each request's ``JobRun`` in one hash, written once per field (an outcome is
    taken back only when the rest of its report failed, its audit entry then withdrawn)."""

    def __init__(self, client: RedisClient, keys: Keys, audit: AuditLog) -> None:
        self._client = client
        self._keys = keys
        self._audit = audit

    async def start(self, run_id: str, attempt: str, *, record_id: str, at: datetime) -> Start:
        """Mark the approved command of ``run_id`` started by ``attempt`` (a token of the
        job's try, so the same call sent again finds itself), unless record ``record_id``
        (its request) was superseded: checked in the same step, so a supersede racing
        this start lets one of them through."""
        key = self._keys.run_job(run_id)
        args: list[str | int] = [f"{to_ms(at)} {attempt}", int(KEPT.total_seconds() * 1000)]
        keys = [key, self._keys.record(record_id)]
        status, stored = cast(list[str], await self._client.eval("job_start", keys, args))
        if status == "superseded":
            return Start(superseded_by=stored)
        ms, _, by = stored.partition(" ")
        return Start(first=by == attempt, at=_moment(key, ms))

    async def report(
        self, run_id: str, digest: str, *, outcome: str, at: datetime, withdrawal: AuditEntry
    ) -> Literal["first", "again", "other"]:
        """Keep ``outcome`` (JSON; ``digest`` names its report) as ``run_id``'s, with the
        run's end mark, in one step: "first" when taken, "again" for that report sent again
        (its answer was lost), "other" once another report was taken. Taken after another
        report was forgotten whose entry is in the audit trail (``audit_mark``), that step
        audits ``withdrawal`` with the forgotten report as its detail."""
        mine = f"{digest} {secrets.token_hex(8)}"  # redis-py sending it again finds itself
        streams, audit_args = self._audit.in_script(withdrawal)
        keys = [self._keys.run_ended(run_id), self._keys.run_job(run_id)]
        keys += [self._keys.run_audited(run_id), *streams]
        args: list[str | int] = [mine, f"{to_ms(at)} {outcome}", int(KEPT.total_seconds() * 1000)]
        stored = str(await self._client.eval("outcome_report", keys, args + audit_args))
        if stored == mine:
            return "first"
        return "again" if stored.split(" ")[0] == digest else "other"

    async def forget_report(self, run_id: str, digest: str) -> None:
        """Forget ``run_id``'s outcome and end mark, if report ``digest``'s, in one step: what
        its report had still to store failed, so the job's retry, that report or another, is
        the one kept (and, if another, withdraws this one's audit entry)."""
        keys = [self._keys.run_ended(run_id), self._keys.run_job(run_id)]
        await self._client.eval("outcome_forget", keys, [digest])

    async def read(self, run_id: str) -> JobRun:
        """What the job of ``run_id`` told: nothing yet, its start, its outcome."""
        key = self._keys.run_job(run_id)
        async with self._client.guard(f"read the run of {run_id}"):
            stored = cast(dict[str, str], await self._client.raw.hgetall(key))
        started, outcome = stored.get("started"), stored.get("outcome")
        ms, _, report = (outcome or "").partition(" ")
        return JobRun(
            started_at=_moment(key, started.partition(" ")[0]) if started else None,
            outcome=report or None,
            reported_at=_moment(key, ms) if outcome else None,
        )


def _moment(key: str, ms: str) -> datetime:
    try:
        return from_ms(int(ms))
    except ValueError as exc:
        raise CorruptRecordError(key, "a time is not a number") from exc
