"""Resume workers: continue runs whose last pending interrupt was decided.

Each worker reads jobs from storage's resume queue (a consumer group), takes the run's
lease for the session version it resumes from, runs the agent, and acknowledges only
after the new snapshot is saved. Jobs of a crashed worker are reclaimed once its
heartbeat stops (``TAKEOVER_AFTER``), and storage makes sure a job is applied at most
once per run version. A job whose resume keeps failing is retried after the same
timeout, up to storage's ``max_attempts``; then it is dead-lettered and the run's thread
is told, instead of retrying it forever. A run no retry can resume (the workflow node it
stopped at was renamed or removed by a deploy: ``UnresumableError``) is dead-lettered at
once.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from datetime import timedelta

from agent_runtime.errors import AgentRuntimeError, ResumeError, UnresumableError
from bot.errors import AgentBuildError, BotError
from bot.services import Services
from bot.services.consumer_loop import ConsumerLoop
from bot.services.log_context import log_ids
from bot.ui.notes import post_in_thread
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.requests import is_request_run
from storage.resume import TAKEOVER_AFTER, ResumeJob

from .drive import resume_run
from .place import first_posted, place_of
from .recovery import catch_up

log = logging.getLogger(__name__)


PROCESS_TAG = secrets.token_hex(4)
"""Sets this process apart from another with the same host name and PID: containers on the
host's network each run as PID 1, and a restarted one comes back under its old name. Two
processes sharing a consumer name would each take the other's run leases for their own."""


def consumer_name(index: int) -> str:
    """A consumer name unique to this process and worker."""
    return f"{socket.gethostname()}-{os.getpid()}-{PROCESS_TAG}-{index}"


class ResumeWorker(ConsumerLoop[ResumeJob]):
    """One consumer of one shard of the resume queue; ``run`` until ``stop`` is called."""

    def __init__(
        self,
        services: Services,
        *,
        consumer: str,
        shard: int = 0,
        reclaim_after: timedelta = TAKEOVER_AFTER,
    ) -> None:
        super().__init__(
            consumer=consumer, batch=10, outage=services.outage, reclaim_after=reclaim_after
        )
        self._services = services
        self._shard = shard

    async def take_over(self, *, min_idle: timedelta, count: int) -> list[ResumeJob]:
        return await self._services.storage.resume.reclaim(
            self.consumer, shard=self._shard, min_idle=min_idle, count=count
        )

    async def read(self, *, count: int, block: timedelta) -> list[ResumeJob]:
        return await self._services.storage.resume.claim(
            self.consumer, shard=self._shard, count=count, block=block
        )

    async def keep(self, jobs: list[ResumeJob]) -> None:
        await self._services.storage.resume.heartbeat(jobs, consumer=self.consumer)

    async def handle(self, jobs: list[ResumeJob]) -> None:
        """Apply the jobs one after the other."""
        for job in jobs:
            try:
                await self.handle_job(job)
            except StorageError as exc:
                # Left unacknowledged: taken over once idle past ``reclaim_after``.
                log.error("resume job %s of run %s: %s", job.id, job.run_id, exc)

    async def handle_job(self, job: ResumeJob) -> None:
        """Apply one job exactly once, its log lines tagged with the run."""
        with log_ids(run_id=job.run_id):
            await self._handle_job(job)

    async def _handle_job(self, job: ResumeJob) -> None:
        """Apply one job exactly once; on failure count the attempt (``_failed``)."""
        services, queue = self._services, self._services.storage.resume
        if is_request_run(job.run_id):
            # An external request has no run to resume: its waiters read the answer.
            await queue.ack(job)
            return
        taken = await queue.take(job, consumer=self.consumer)
        if taken.status == "done":
            await queue.ack(job)
            return
        if taken.status == "busy":
            return
        version, records = taken.session_version, list(taken.records)
        decided_at = max((r.decided_at for r in records if r.decided_at), default=None)
        resuming = services.clock.now()
        try:
            if taken.missing or not records:
                log.error("resume job %s: records %s are gone; dropping it", job.id, taken.missing)
                await queue.complete(job, consumer=self.consumer, session_version=version)
                return
            if taken.session is None:
                await resume_run(services, records, thread_id=job.thread_id)
            else:
                with services.storage.sessions.preloaded(job.thread_id, taken.session):
                    await resume_run(services, records, thread_id=job.thread_id)
        except ResumeError as refused:
            if not await self._caught_up(job, records, refused):
                await self._failed(job, records, refused)
            return
        except Exception as exc:
            log.exception("resume job %s of run %s failed", job.id, job.run_id)
            await self._failed(job, records, exc)
            return
        if decided_at is not None:  # timed once it resumed: a failed attempt did not
            lag = (resuming - decided_at).total_seconds()
            services.metrics.click_to_resume.observe(max(lag, 0.0))
        await queue.complete(job, consumer=self.consumer, session_version=version)

    async def _failed(
        self, job: ResumeJob, records: list[InterruptRecord], exc: BaseException
    ) -> None:
        """Count the failure: the job is retried later, or, after the last attempt (at once
        for a run no retry can resume), given up (dead-lettered) and the run's thread told
        why it stopped."""
        services = self._services
        # Our own errors (the bot's, the runtime's) say what to do, a failed build which agent
        # and what type of error; another's type is enough here (the log has more).
        ours = isinstance(exc, BotError | AgentRuntimeError | AgentBuildError)
        error = str(exc) if ours else type(exc).__name__
        permanent = isinstance(exc, UnresumableError)
        failure = await services.storage.resume.fail(
            job, consumer=self.consumer, error=error, now=services.clock.now(), permanent=permanent
        )
        if not failure.dead:
            log.warning(
                "resume job %s of run %s: attempt %d of %d failed (%s); it will be retried",
                job.id,
                job.run_id,
                failure.attempts,
                services.storage.resume.max_attempts,
                error,
            )
            return
        services.metrics.resume_dead_letters += 1
        given_up = "without a retry" if permanent else f"after {failure.attempts} attempts"
        log.error(
            "resume job %s of run %s given up %s (%s); moved to the dead-letter stream",
            job.id,
            job.run_id,
            given_up,
            error,
        )
        if not records:
            return
        place = place_of(first_posted(records))
        if permanent:
            text = f"Could not resume this run: {error}. It will not be retried; see the worker log"
        else:
            text = (
                f"Could not resume this run after {failure.attempts} attempts: {error}; "
                "see the worker log"
            )
        await post_in_thread(services, channel=place.channel, thread_ts=place.thread_ts, text=text)

    async def _caught_up(
        self, job: ResumeJob, records: list[InterruptRecord], refused: ResumeError
    ) -> bool:
        """After a refused resume: catch the run up if an earlier attempt applied the answers.

        The job is acknowledged without marking a version applied: the stored version is
        the one the run's next resume job will start from.
        """
        queue = self._services.storage.resume
        try:
            caught_up = await catch_up(self._services, records, thread_id=job.thread_id)
        except Exception:
            log.exception("resume job %s of run %s: catching up failed", job.id, job.run_id)
            return False
        if not caught_up:
            # Whether it is retried or given up, the failure it is counted as says.
            log.warning("resume job %s refused, no earlier attempt applied it: %s", job.id, refused)
            return False
        await queue.ack(job)
        await queue.release(job, consumer=self.consumer)
        return True
