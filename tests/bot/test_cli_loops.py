"""The loops each ``signoff`` process runs, as real processes: how many it logs, the
worker's CPU priority and its optional HTTP port."""

from __future__ import annotations

import asyncio
import os

import pytest
from cli_procs import bot_env, json_worker, logged, start_signoff
from fakes import FakeSlack


@pytest.fixture
def env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    return bot_env(slack, redis_url, key_prefix)


@pytest.mark.parametrize("increment", [19, 7, 0])
async def test_the_worker_lowers_its_cpu_priority_by_signoff_worker_nice(
    env: dict[str, str], increment: int
) -> None:
    process = await start_signoff(
        *("worker", "--agents", "cleanup_agents"),
        env={**env, "SIGNOFF_WORKER_NICE": str(increment), "SIGNOFF_LOG_FORMAT": "text"},
    )
    assert process.stderr is not None
    try:
        line = b""
        while b"running at nice" not in line:
            line = await asyncio.wait_for(process.stderr.readline(), 60)
            assert line, "the worker stopped before its loops ran"
        expected = min(os.nice(0) + increment, 19)  # this process's own niceness is unchanged
        assert os.getpriority(os.PRIO_PROCESS, process.pid) == expected
        assert f"running at nice {expected}" in line.decode()
        idle = increment > 0 and expected == 19
        assert (os.sched_getscheduler(process.pid) == os.SCHED_IDLE) is idle
        assert ("in the idle scheduling class" in line.decode()) is idle
    finally:
        process.terminate()
        await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0


@pytest.mark.parametrize(
    ("layout", "workers", "running"),
    [
        ("single", "3", "1 click decider, 3 resume workers and the scheduler are running"),
        ("single", "0", "1 click decider, 1 resume worker and the scheduler are running"),
        (
            "cluster",
            "3",
            "8 click deciders, 24 resume workers (1 and 3 on each of 8 shards) and the",
        ),
    ],
)
async def test_the_worker_logs_how_many_loops_it_runs_on_each_shard(
    env: dict[str, str], request: pytest.FixtureRequest, layout: str, workers: str, running: str
) -> None:
    """``SIGNOFF_WORKERS=0`` leaves a worker one resume worker: it is what it runs."""
    cluster = {"REDIS_URL": str(request.getfixturevalue("redis_cluster").url)}
    layout_env = cluster if layout == "cluster" else {}
    process = await json_worker({**env, **layout_env, "SIGNOFF_WORKERS": workers})
    try:
        event = await logged(process, "running at nice", "the worker stopped before its loops ran")
        assert event.startswith(running), event
    finally:
        process.terminate()
        await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0


@pytest.mark.parametrize(
    ("args", "workers", "running"),
    [
        ((), "2", "1 click decider, 2 resume workers and the scheduler are running"),
        ((), "0", "1 click decider, 0 resume workers and the scheduler are running"),
        (("--no-workers",), "2", "0 click deciders, 0 resume workers and the scheduler are"),
    ],
)
async def test_serve_logs_the_loops_it_runs_none_but_the_scheduler_with_no_workers(
    env: dict[str, str], args: tuple[str, ...], workers: str, running: str
) -> None:
    """``SIGNOFF_WORKERS=0`` leaves ``serve`` without resume workers; ``--no-workers``
    without click deciders too (clicks wait in Redis for a ``signoff worker``)."""
    http = {"SLACK_SIGNING_SECRET": "secret", "SIGNOFF_HOST": "127.0.0.1", "SIGNOFF_PORT": "0"}
    process = await start_signoff(
        "serve",
        *args,
        env={**env, **http, "SIGNOFF_WORKERS": workers, "SIGNOFF_LOG_FORMAT": "json"},
    )
    try:
        event = await logged(process, "are running", "serve stopped before its loops ran")
        assert event.startswith(running), event
    finally:
        process.terminate()
        await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0


async def test_a_worker_on_port_0_logs_the_port_it_serves(env: dict[str, str]) -> None:
    process = await json_worker({**env, "SIGNOFF_HOST": "127.0.0.1"}, "--port", "0")
    try:
        event = await logged(process, "/metrics on http://", "the worker stopped before it served")
        port = int(event.rsplit(":", 1)[1])
        assert port != 0, event
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.0\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.0 200")
        writer.close()
    finally:
        process.terminate()
        await asyncio.wait_for(process.communicate(), 60)
