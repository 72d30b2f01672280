"""Real processes: the bot that took the click is gone before it is decided.

`signoff serve --no-workers` acknowledges the click (queued in Redis's click stream),
then is killed; two `signoff worker` processes started afterwards decide the click and
resume the run, each exactly once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from bot.ui import ids
from sandbox import Sandbox
from storage import EmbeddedRedis

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
GENERAL = "C0GENERAL"
ALICE, BOB = "U0ALICE", "U0BOB"
SIGNOFF = Path(sys.executable).parent / "signoff"  # the installed console script
WORKERS_RUNNING = "resume workers (2) and the scheduler are running"


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = EmbeddedRedis(tmp_path / "redis")
    yield server.start()
    server.stop()


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with Sandbox() as running:
        yield running


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(sandbox: Sandbox, redis_url: str, marks: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}",
        "SLACK_BOT_TOKEN": sandbox.bot_token,
        "SLACK_SIGNING_SECRET": sandbox.signing_secret,
        "SIGNOFF_SLACK_API_URL": sandbox.api_url,
        "REDIS_URL": redis_url,
        "SIGNOFF_AGENTS": "process_agents",
        "SIGNOFF_CHANNEL": GENERAL,
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_TEST_MARKS": str(marks),
        # Debug logs include every Web API request slack-sdk sends: tokens must not.
        "SIGNOFF_LOG_LEVEL": "DEBUG",
    }


def _signoff(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([str(SIGNOFF), *args], env=env, stdout=out, stderr=out)


async def _until_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    async with aiohttp.ClientSession() as http, asyncio.timeout(30):
        while True:
            assert process.poll() is None, f"the bot exited while starting; see {log}"
            try:
                async with http.get(url) as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)  # the process is booting: poll its health endpoint


async def _until_logged(log: Path, text: str, *, times: int) -> None:
    """Wait until ``text`` appears ``times`` times in the processes' shared log."""
    async with asyncio.timeout(30):
        while True:
            if (await asyncio.to_thread(log.read_text)).count(text) >= times:
                return
            await asyncio.sleep(0.05)  # the processes are booting: poll their log


async def test_a_new_worker_process_resumes_a_click_taken_by_a_killed_bot(
    sandbox: Sandbox, redis_url: str, tmp_path: Path
) -> None:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", _free_port()
    env = _env(sandbox, redis_url, marks, port)
    server = _signoff("serve", "--no-workers", env=env, log=log)
    try:
        await _until_healthy(f"http://127.0.0.1:{port}/healthz", server, log)
        sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"

        ack = await sandbox.interactions.slash_command(
            ALICE, channel=GENERAL, command="/signoff", text="run cleanup now"
        )
        assert ack.status == "acked", ack
        ws = sandbox.workspace
        request = await sandbox.wait_for(
            lambda: next((m for m in ws.history(GENERAL) if ids.APPROVE in str(m.blocks)), None),
            within=15,
        )
        ack = await sandbox.interactions.click(
            BOB, channel=GENERAL, message_ts=request.ts, action_id=ids.APPROVE
        )
        assert ack.status == "acked", ack
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    # Acknowledged, but neither decided nor resumed: the killed bot only queued it.
    assert "Approved" not in str(ws.message(GENERAL, request.ts).blocks)
    assert not marks.exists()

    workers = [_signoff("worker", env=env, log=log) for _ in range(2)]
    try:
        await _until_logged(log, WORKERS_RUNNING, times=2)
        # Workers yield the CPU to the acks of a serve process on the same host.
        expected = 19  # the lowest priority, whatever this process runs at
        assert [os.getpriority(os.PRIO_PROCESS, w.pid) for w in workers] == [expected] * 2
        finished = await sandbox.wait_for(
            lambda: next(
                (m for m in ws.replies(GENERAL, request.ts) if m.text.startswith("Finished")),
                None,
            ),
            within=30,
        )
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert worker.wait(timeout=15) == 0, log.read_text()
    assert finished.text == "Finished: done: deleted 2 file(s)"
    assert "Approved" in str(ws.message(GENERAL, request.ts).blocks)
    assert ws.ephemerals(BOB, GENERAL) == []  # decided once: no "already decided" note
    [line] = marks.read_text().splitlines()  # the tool ran exactly once, in a worker
    pid, *paths = line.split()
    assert int(pid) in {w.pid for w in workers} and paths == ["/tmp/a", "/tmp/b"]
    logged = log.read_text()
    assert "chat.postMessage" in logged  # the debug log did record the Web API calls
    assert sandbox.bot_token not in logged and sandbox.signing_secret not in logged
