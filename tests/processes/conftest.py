"""Fixtures of the process tests: a sandbox per test, and Redis twice over: an embedded
server of the test's own, then the session's Redis Cluster under a key prefix of the
test's own (``SIGNOFF_REDIS_PREFIX``, which the processes inherit); and for the gate tests,
``signoff serve`` running with a named client's token."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from gate_stack import Stack
from procs import GENERAL, SIGNOFF, free_port, signoff_env, start_signoff

from sandbox import Sandbox
from storage import EmbeddedRedis


@pytest.fixture(params=["single", "cluster"])
def redis_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[str]:
    if request.param == "cluster":
        monkeypatch.setenv("SIGNOFF_REDIS_PREFIX", key_prefix)
        yield str(request.getfixturevalue("redis_cluster").url)
        return
    server = EmbeddedRedis(tmp_path / "redis")
    yield server.start()
    server.stop()


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with Sandbox() as running:
        yield running


@pytest.fixture
async def stack(sandbox: Sandbox, redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    env = signoff_env(sandbox, redis_url, marks, port)
    sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
    # The server starts while the client is made: it needs no token, only the gates do.
    server = start_signoff("serve", env=env, log=log)
    try:
        made = await asyncio.create_subprocess_exec(
            str(SIGNOFF),
            *("token", "create", "nightly-cleanup", "--channels", GENERAL),
            env=env,
            stdout=asyncio.subprocess.PIPE,
        )
        printed, _ = await made.communicate()
        assert made.returncode == 0
    except BaseException:
        server.kill()
        server.wait()
        raise
    token = printed.decode().splitlines()[0].removeprefix("SIGNOFF_TOKEN=")
    env |= {"SIGNOFF_URL": f"http://127.0.0.1:{port}", "SIGNOFF_TOKEN": token, "MARKS": str(marks)}
    running = Stack(sandbox, env, log, marks, port, server)
    await running.healthy()
    yield running
    for gate in running.gates:
        if gate.returncode is None:
            os.killpg(gate.pid, signal.SIGKILL)
            await gate.wait()
    await running.stop()
    assert token not in log.read_text()
