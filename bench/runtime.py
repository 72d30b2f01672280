"""Runtime benchmark: interrupt→resume cycles of a scripted agent (one guarded tool call,
stopped for approval, resumed approved, run to its end) with its session kept in Redis
(``RedisSessionStore`` on an embedded server, then on a local 3-primary cluster) against
the same agent on the in-memory store, in the same run. Prints cycles/s for each, the
ratios, Redis round trips and server commands per cycle, and the median cost of one
round trip (a PING on a plain socket and through redis-py, a session load and save) as
this process sees it (``cluster_*`` for the cluster); the last line is one JSON object
with every figure.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

from agent_runtime import (
    Agent,
    Decision,
    InMemorySessionStore,
    ModelRequest,
    ModelResponse,
    SessionStore,
    ToolCall,
    tool,
)
from bench.report import report
from bench.storage import counted, median_ms
from bench.usage import usage
from storage import EmbeddedRedis, Storage, connect
from storage.embedded_cluster import EmbeddedCluster

CYCLES = 300
TRIPS = 2000
"""Round trips timed for each median cost."""


class OneCallModel:
    """Asks for one guarded call, then reports its result: stateless, as a real model is."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        if not any(m.role == "tool" for m in request.messages):
            call = ToolCall(id="call_1", name="delete_files", args={"paths": ["/tmp/a.log"]})
            return ModelResponse(tool_calls=(call,))
        return ModelResponse(text="done")


@tool
def delete_files(paths: list[str]) -> str:
    """Delete the given files (here: nothing)."""
    return f"deleted {len(paths)}"


def agent(store: SessionStore) -> Agent:
    return Agent(
        model=OneCallModel(),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
        session_store=store,
        name="bench",
    )


async def cycle(runner: Agent) -> str:
    """One interrupt→resume cycle on a new thread, named by the runtime as the bot's runs
    are; returns the thread."""
    asked = await runner.invoke("clean up")
    [interrupt] = asked.interrupts
    done = await runner.invoke({interrupt.id: Decision.approve()}, thread_id=asked.thread_id)
    assert done.stop_reason == "end_turn", done
    return asked.thread_id


async def cycles_per_s(runner: Agent) -> float:
    await cycle(runner)
    started = time.perf_counter()
    for _ in range(CYCLES):
        await cycle(runner)
    return CYCLES / (time.perf_counter() - started)


async def through_redis(url: str, memory_rate: float) -> dict[str, float | int]:
    """The figures of the agent with its sessions on the server (or cluster) at ``url``."""
    storage = await connect(url, prefix="bench")
    try:
        redis_agent = agent(storage.sessions)
        await cycle(redis_agent)  # loads the scripts
        threads: list[str] = []
        trips, commands = await counted(storage, lambda: _kept(cycle(redis_agent), threads))
        redis_rate = await cycles_per_s(redis_agent)
        costs = await round_trip_costs(storage, threads[0])
    finally:
        await storage.close()
    return {
        "redis_cycles_per_s": round(redis_rate),
        "redis_over_in_memory": round(redis_rate / memory_rate, 2),
        "round_trips_per_cycle": trips,
        "server_commands_per_cycle": commands,
        **costs,
    }


async def _kept(thread: Awaitable[str], threads: list[str]) -> None:
    threads.append(await thread)


async def round_trip_costs(storage: Storage, thread: str) -> dict[str, float]:
    """The median µs of one round trip: a PING on a plain asyncio connection to the same
    server (a cluster's first node: the cost without a client library), a PING through
    redis-py, and a load and a save of ``thread``, a cycle's session."""
    sessions = storage.sessions
    stored = await sessions.load(thread)
    assert stored is not None
    version = stored.version

    async def save() -> None:
        nonlocal version
        version = await sessions.save(thread, stored.snapshot, expected_version=version)

    reader, writer = await _plain_connection(storage)

    async def bare_ping() -> None:
        writer.write(b"*1\r\n$4\r\nPING\r\n")
        reply = await reader.readline()
        assert reply == b"+PONG\r\n", reply

    costs = {}
    try:
        for name, action in (
            ("bare_ping", bare_ping),
            ("ping", storage.client.raw.ping),
            ("session_load", lambda: sessions.load(thread)),
            ("session_save", save),
        ):
            costs[f"{name}_us"] = round(await median_ms(action, TRIPS) * 1000, 1)
    finally:
        writer.close()
    return costs


async def _plain_connection(storage: Storage) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A plain asyncio connection to the server ``storage`` uses, logged in as it is."""
    cluster = storage.client.cluster
    if cluster is not None:
        reader, writer = await asyncio.open_connection(*cluster.nodes[0])
        login = (cluster.username, cluster.password)
    else:
        where = storage.client.raw.connection_pool.connection_kwargs
        reader, writer = await asyncio.open_unix_connection(where["path"])
        login = (where.get("username"), where.get("password"))
    if login[1] is not None:
        words = [w.encode() for w in ("AUTH", *(w for w in login if w is not None))]
        writer.write(
            b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
        )
        reply = await reader.readline()
        assert reply == b"+OK\r\n", reply
    return reader, writer


async def main() -> None:
    memory_rate = await cycles_per_s(agent(InMemorySessionStore()))
    with tempfile.TemporaryDirectory() as data_dir:
        async with EmbeddedRedis(Path(data_dir) / "single") as url:
            single = await through_redis(url, memory_rate)
        cluster = EmbeddedCluster(Path(data_dir) / "cluster")
        try:
            clustered = await through_redis(await asyncio.to_thread(cluster.start), memory_rate)
        finally:
            cluster.stop()
    figures = {
        "cycles": CYCLES,
        "in_memory_cycles_per_s": round(memory_rate),
        **single,
        **{f"cluster_{name}": value for name, value in clustered.items()},
    }
    report(figures)


if __name__ == "__main__":
    usage("bench.runtime", __doc__).parse_args(sys.argv[1:])
    asyncio.run(main())
