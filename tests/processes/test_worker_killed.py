"""Real processes: a worker is killed -9 after the approved tool ran, while it posts the
tool's result to Slack. Another process takes the run over within seconds (the dead
worker's heartbeat stopped) and the tool is not run again: its result was saved before
anything was posted.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from procs import (
    ALICE,
    BOB,
    GENERAL,
    exit_status,
    free_port,
    signoff_env,
    start_signoff,
    until_healthy,
)

from bot.ui import ids
from sandbox import Sandbox
from storage.resume import TAKEOVER_AFTER


def _lines(marks: Path) -> list[list[str]]:
    return [line.split() for line in marks.read_text().splitlines()] if marks.exists() else []


async def test_a_worker_killed_while_posting_a_tool_result_never_runs_the_tool_twice(
    sandbox: Sandbox, redis_url: str, tmp_path: Path
) -> None:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    env = signoff_env(sandbox, redis_url, marks, port)
    doomed = start_signoff("serve", env=env, log=log)
    ws = sandbox.workspace
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", doomed, log)
        sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
        await sandbox.interactions.slash_command(
            ALICE, channel=GENERAL, command="/signoff", text="run cleanup now"
        )
        request = await sandbox.wait_for(
            lambda: next((m for m in ws.history(GENERAL) if ids.APPROVE in str(m.blocks)), None),
            within=15,
        )
        # The next two messages the bot posts hang: the note telling Alice that Bob approved
        # (posted at the click), and the tool's result in the run's thread (posted once the
        # result is saved). Once both hang, the worker is inside the result's post.
        sandbox.faults.latency("chat.postMessage", seconds=120, count=2)
        ack = await sandbox.interactions.click(
            BOB, channel=GENERAL, message_ts=request.ts, action_id=ids.APPROVE
        )
        assert ack.status == "acked", ack
        await sandbox.wait_for(
            lambda: len(_lines(marks)) == 1 and sandbox.faults.pending("chat.postMessage") == 0,
            within=15,
        )
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
    killed_at = time.monotonic()

    survivor = start_signoff("worker", env=env, log=log)
    try:
        finished = await sandbox.wait_for(
            lambda: next(
                (m for m in ws.replies(GENERAL, request.ts) if m.text.startswith("Finished")),
                None,
            ),
            within=30,
        )
        taken_over_after = time.monotonic() - killed_at
    finally:
        survivor.send_signal(signal.SIGTERM)
        assert await exit_status(survivor) == 0, log.read_text()
    assert finished.text == f"Finished: done: deleted 2 file(s)\ncc <@{ALICE}>"
    [(pid, attempt, _key, *paths)] = _lines(marks)  # the tool ran once, in the killed worker
    assert int(pid) == doomed.pid and attempt == "1" and paths == ["/tmp/a", "/tmp/b"]
    # Taken over once the dead worker's heartbeat went quiet, not after a minute.
    assert taken_over_after < 3 * TAKEOVER_AFTER.total_seconds()
