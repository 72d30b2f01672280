"""Real processes, real frameworks: a Strands agent's and a LangGraph graph's card is
posted by one bot process, that process is killed, and a new one takes the click and
resumes the framework's run, which runs the tool exactly once."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
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


@pytest.mark.parametrize("agent", ["strands-cleanup", "graph-cleanup"])
async def test_a_restarted_bot_resumes_the_frameworks_run_once(
    sandbox: Sandbox, redis_url: str, tmp_path: Path, agent: str
) -> None:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    env = signoff_env(sandbox, redis_url, marks, port)
    env["SIGNOFF_AGENTS"] = "adapter_agents"
    env["SIGNOFF_TEST_GRAPH"] = str(tmp_path / "graph.sqlite")
    sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
    ws = sandbox.workspace

    first = start_signoff("serve", env=env, log=log)
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", first, log)
        ack = await sandbox.interactions.slash_command(
            ALICE, channel=GENERAL, command="/signoff", text=f"run {agent} now"
        )
        assert ack.status == "acked", ack
        card = await sandbox.wait_for(
            lambda: next((m for m in ws.history(GENERAL) if ids.APPROVE in str(m.blocks)), None),
            within=30,
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert "delete_files" in str(card.blocks) and not marks.exists()

    second = start_signoff("serve", env=env, log=log)
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", second, log)
        ack = await sandbox.interactions.click(
            BOB, channel=GENERAL, message_ts=card.ts, action_id=ids.APPROVE
        )
        assert ack.status == "acked", ack
        finished = await sandbox.wait_for(
            lambda: next(
                (m for m in ws.replies(GENERAL, card.ts) if m.text.startswith("Finished")), None
            ),
            within=30,
        )
    finally:
        second.send_signal(signal.SIGTERM)
        assert await exit_status(second) == 0, log.read_text()
    assert finished.text.startswith("Finished: done: deleted 2 file(s)"), finished.text
    [line] = marks.read_text().splitlines()  # the tool ran once, in the new process
    assert line == f"{second.pid} /tmp/a /tmp/b"
