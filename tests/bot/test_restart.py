"""A bot process stopped between the click and the resume: another resumes the run exactly once
(issue 4, test 11)."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from typing import Any

from harness import ALICE, Harness

from bot.ui import ids


async def _decided(bot: Harness, value: str) -> None:
    """Wait for the message update that follows the recorded decision."""
    await bot.slack.wait_calls("chat.update")
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved"


async def test_a_new_process_resumes_a_run_decided_while_no_worker_ran(make_bot: Any) -> None:
    first: Harness = await make_bot(workers=0)
    value = await first.start()
    await first.click(ids.APPROVE, value, user=ALICE)
    await _decided(first, value)
    await first.loops.stop()
    assert first.tool_log.calls == []

    second: Harness = await make_bot(workers=1)
    assert "deleted 2 file(s)" in await second.finished()
    assert second.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert first.tool_log.calls == []


async def test_a_job_claimed_by_a_worker_that_died_is_reclaimed_and_applied_once(
    make_bot: Any,
) -> None:
    first: Harness = await make_bot(workers=0)
    value = await first.start()
    await first.click(ids.APPROVE, value, user=ALICE)
    await _decided(first, value)
    queue = first.services.storage.resume
    claimed = await queue.claim("worker-that-died", count=10, block=timedelta(milliseconds=10))
    assert len(claimed) == 1  # delivered to a consumer that never acknowledges it

    second: Harness = await make_bot(workers=2, reclaim_after=0.05)
    await second.finished()
    assert second.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    await second.loops.stop()  # lets the worker finish the job it holds
    assert await queue.pending_count() == 0
    finals = [t for t in second.thread() if t.startswith("Finished")]
    assert len(finals) == 1


def _consumer_name_in_a_process_as_pid_1_on_host_h() -> str:
    """The first worker's consumer name in a new Python process whose host name and PID are
    those of a container on the host's network (or restarted in its predecessor's place)."""
    code = (
        "import os, socket; os.getpid = lambda: 1; socket.gethostname = lambda: 'h'\n"
        "from bot.runs.workers import consumer_name; print(consumer_name(0))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_two_processes_with_one_host_name_and_pid_consume_under_different_names() -> None:
    # Two consumers under one name would each renew and use the other's run lease.
    first, second = (_consumer_name_in_a_process_as_pid_1_on_host_h() for _ in range(2))
    assert first.startswith("h-1-") and second.startswith("h-1-")
    assert first != second
