"""Resume workers: continue runs whose last pending interrupt was decided.

Each worker reads jobs from storage's resume queue (a consumer group), takes the run's
lease for the session version it resumes from, runs the agent, and acknowledges only
after the new snapshot is saved. Jobs of a crashed worker are reclaimed after a timeout,
and storage makes sure a job is applied at most once per run version. A job whose resume
keeps failing is retried after the same timeout, up to storage's ``max_attempts``; then
it is dead-lettered and the run's thread is told, instead of retrying it forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from datetime import timedelta

from agent_runtime.errors import ResumeError
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.resume import ResumeJob

from .poster import post_in_thread
from .recovery import catch_up
from .runs import place_of, resume_run
from .services import Services

log = logging.getLogger(__name__)


def consumer_name(index: int) -> str:
    """A consumer name unique to this process and worker."""
    return f"{socket.gethostname()}-{os.getpid()}-{index}"


class ResumeWorker:
    """One consumer of the resume queue; ``run`` until ``stop`` is called."""

    def __init__(
        self,
        services: Services,
        *,
        consumer: str,
        block: timedelta = timedelta(seconds=1),
        reclaim_after: timedelta = timedelta(seconds=60),
    ) -> None:
        self._services = services
        self.consumer = consumer
        self._block = block
        self._reclaim_after = reclaim_after
        self._reclaim_due = 0.0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        while not self._stopping.is_set():
            try:
                jobs = await self._next_jobs()
            except StorageError as exc:
                log.error("resume worker %s cannot read jobs: %s", self.consumer, exc)
                await self._pause(1.0)
                continue
            for job in jobs:
                try:
                    await self.handle(job)
                except StorageError as exc:
                    # Left unacknowledged: reclaimed once idle past ``reclaim_after``.
                    log.error("resume job %s of run %s: %s", job.id, job.run_id, exc)

    async def _next_jobs(self) -> list[ResumeJob]:
        """Reclaimed jobs, then new ones; a blocking read gives way at once to ``stop``.

        A read cut short may leave a job delivered to this consumer unacknowledged; it is
        reclaimed by another worker after ``reclaim_after``, never lost.
        """
        queue = self._services.storage.resume
        now = asyncio.get_running_loop().time()
        if now >= self._reclaim_due:
            jobs = await queue.reclaim(self.consumer, min_idle=self._reclaim_after)
            if jobs:
                return jobs
            # Nothing idle that long: look again in half the timeout, not before every read.
            self._reclaim_due = now + self._reclaim_after.total_seconds() / 2
        # Wake for the next reclaim check too, so a failed job is retried on time.
        block = min(self._block, timedelta(seconds=max(self._reclaim_due - now, 0.001)))
        read = asyncio.ensure_future(queue.claim(self.consumer, count=10, block=block))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({read, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not read.done():
            read.cancel()
            await asyncio.gather(read, return_exceptions=True)
            return []
        return read.result()

    async def handle(self, job: ResumeJob) -> None:
        """Apply one job exactly once; on failure count the attempt (``_failed``)."""
        services, queue = self._services, self._services.storage.resume
        taken = await queue.take(job, consumer=self.consumer)
        if taken.status == "done":
            await queue.ack(job)
            return
        if taken.status == "busy":
            return
        version, records = taken.session_version, list(taken.records)
        try:
            if taken.missing or not records:
                log.error("resume job %s: records %s are gone; dropping it", job.id, taken.missing)
                await queue.complete(job, consumer=self.consumer, session_version=version)
                return
            decided_at = max((r.decided_at for r in records if r.decided_at), default=None)
            if decided_at is not None:
                lag = (services.clock.now() - decided_at).total_seconds()
                services.metrics.click_to_resume.observe(max(lag, 0.0))
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
        await queue.complete(job, consumer=self.consumer, session_version=version)

    async def _failed(
        self, job: ResumeJob, records: list[InterruptRecord], exc: BaseException
    ) -> None:
        """Count the failure: the job is retried later, or, after the last attempt, given
        up (dead-lettered) and the run's thread told why it stopped."""
        services = self._services
        error = type(exc).__name__
        failure = await services.storage.resume.fail(
            job, consumer=self.consumer, error=error, now=services.clock.now()
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
        log.error(
            "resume job %s of run %s given up after %d attempts (%s); moved to the "
            "dead-letter stream",
            job.id,
            job.run_id,
            failure.attempts,
            error,
        )
        if not records:
            return
        place = place_of(records[0])
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
            log.error("resume job %s refused (%s); it will be retried", job.id, refused)
            return False
        await queue.ack(job)
        await queue.release(job, consumer=self.consumer)
        return True

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)
