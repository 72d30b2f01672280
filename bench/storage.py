"""Storage benchmark against a real embedded server, then a local 3-primary cluster.

Prints round trips per decision and per full interrupt lifecycle (counted on the client
as request flushes, plus the servers' own command count from INFO commandstats),
decisions/s with 50 concurrent deciders, memory per pending interrupt over 10k records
(each of its own run), and the cost of listing a channel page and of one expiry sweep at
1k and 100k pending; the same figures on the cluster (``cluster_*``; on a cluster a query
sends one request to each primary holding shards, in parallel, and each counts). The last
line is one JSON object with every figure.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from redis.asyncio.connection import AbstractConnection

from agent_runtime.interrupts import Decision, Interrupt
from agent_runtime.messages import ToolCall
from bench.report import report
from bench.usage import usage
from storage import ApproverPolicy, EmbeddedRedis, InterruptRecord, Storage, connect
from storage.embedded_cluster import EmbeddedCluster
from storage.sweeps import POST_LEASE

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
POLICY = ApproverPolicy(
    allowed_users=("UALICE", "UBOB", "UCAROL"),
    expires_in=timedelta(days=1),
    reminders=(timedelta(hours=1), timedelta(hours=4)),
)
SENDS = 0
_send = AbstractConnection.send_packed_command


async def _counting_send(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
    global SENDS
    SENDS += 1
    await _send(self, command, check_health)


AbstractConnection.send_packed_command = _counting_send  # type: ignore[method-assign]


def record(run: str, n: int, *, now: datetime = NOW, expires_in: timedelta | None = None) -> Any:
    interrupt = Interrupt(
        id=f"int_{n}",
        name="delete_files",
        reason="delete files older than 5 days",
        tool_call=ToolCall(id=f"call_{n}", name="delete_files", args={"paths": ["/tmp/a.log"]}),
        allowed_decisions=("approve", "reject"),
        created_at=now,
    )
    policy = POLICY.model_copy(update={"expires_in": expires_in}) if expires_in else POLICY
    return InterruptRecord.new(
        interrupt,
        run_id=run,
        thread_id=f"th_{run}",
        agent="cleanup",
        requested_by="UREQ",
        policy=policy,
        now=now,
        channel="CAPPROVALS",
    )


async def counted(storage: Storage, action: Callable[[], Awaitable[object]]) -> tuple[int, int]:
    """(client round trips, server commands incl. those inside scripts) for ``action``."""
    global SENDS

    async def server_calls() -> int:
        raw = storage.client.raw
        if storage.client.cluster is None:
            nodes = [await raw.info("commandstats")]
        else:
            nodes = list((await raw.info("commandstats", target_nodes="primaries")).values())
        return sum(v["calls"] for stats in nodes for k, v in stats.items() if k != "cmdstat_info")

    before = await server_calls()
    SENDS = 0
    await action()
    sends = SENDS
    return sends, await server_calls() - before


async def fill(
    storage: Storage, count: int, *, tag: str, expires_in: timedelta, per_run: int = 500
) -> None:
    """``count`` pending interrupts, ``per_run`` to a run (created 500 at a time)."""
    batch = 500
    for start in range(0, count, batch):
        records = [
            record(f"{tag}_{n // per_run}", n, expires_in=expires_in)
            for n in range(start, min(start + batch, count))
        ]
        runs: dict[str, list[Any]] = {}
        for rec in records:
            runs.setdefault(rec.run_id, []).append(rec)
        await asyncio.gather(*(storage.interrupts.create_interrupts(r) for r in runs.values()))


async def median_ms(action: Callable[[], Awaitable[object]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def lifecycle(storage: Storage, n: int, *, repost: bool = False) -> None:
    """What the bot's storage does for one interrupt, as its code does it: create, post
    (where, with its link), decide, the resume worker's claim and take (the lease, the
    session and the records in one script), the run's save, acknowledge. With ``repost``,
    the creator's post failed and the outbox hands it out first."""
    rec = record(f"life_{n}", n)
    await storage.interrupts.create_interrupt(rec)
    if repost:
        await storage.interrupts.claim_outbox(NOW + POST_LEASE)
    link = "https://example.slack.com/archives/CAPPROVALS/p17001"
    await storage.interrupts.mark_posted(rec.id, "CAPPROVALS", "1700.1", permalink=link, now=NOW)
    await storage.interrupts.decide(
        rec.id, "UBOB", Decision.approve(), args_digest=rec.args_digest, now=NOW
    )
    [job] = await storage.resume.claim("bench", shard=storage.keys.shard_of(rec.run_id))
    taken = await storage.resume.take(job, consumer="bench")
    assert taken.status == "go"
    version = taken.session_version
    await storage.sessions.save(job.thread_id, {"done": True}, expected_version=version)
    await storage.resume.complete(job, consumer="bench", session_version=version)


async def scale_costs(url: str, pending: int) -> tuple[float, float]:
    """(channel page ms, expiry sweep ms) with ``pending`` interrupts waiting."""
    storage = await connect(url, prefix=f"scale{pending}")
    await fill(storage, pending, tag="p", expires_in=timedelta(days=2))
    page_ms = await median_ms(lambda: storage.queries.pending_for_channel("CAPPROVALS"), 200)
    sweeps = []
    for round_ in range(20):
        due = [record(f"due_{round_}", n, expires_in=timedelta(minutes=1)) for n in range(100)]
        await storage.interrupts.create_interrupts(due)
        started = time.perf_counter()
        expired = await storage.interrupts.expire_due(NOW + timedelta(minutes=2), limit=100)
        sweeps.append((time.perf_counter() - started) * 1000)
        assert len(expired) == 100
    await storage.client.raw.flushdb()
    await storage.close()
    return page_ms, statistics.median(sweeps)


async def measure(url: str) -> dict[str, Any]:
    """Round trips, server commands and decisions/s of the server (or cluster) at ``url``."""
    storage = await connect(url, prefix="bench")
    decide_rt = []
    for n in range(100):
        rec = record(f"rt_{n}", n)
        await storage.interrupts.create_interrupt(rec)
        decide_rt.append(
            await counted(
                storage,
                lambda rec=rec: storage.interrupts.decide(
                    rec.id, "UBOB", Decision.approve(), args_digest=rec.args_digest, now=NOW
                ),
            )
        )
    await storage.client.raw.flushdb()
    await storage.resume.ensure_group()
    cold_life = await counted(storage, lambda: lifecycle(storage, 1))
    life_rt = await counted(storage, lambda: lifecycle(storage, 2))
    await lifecycle(storage, 3, repost=True)  # loads the outbox's script
    repost_rt = await counted(storage, lambda: lifecycle(storage, 4, repost=True))

    total = 5000
    recs = [record(f"c_{n}", n) for n in range(total)]
    for start in range(0, total, 50):
        await asyncio.gather(
            *(storage.interrupts.create_interrupt(r) for r in recs[start : start + 50])
        )
    queue: asyncio.Queue[InterruptRecord] = asyncio.Queue()
    for r in recs:
        queue.put_nowait(r)

    async def decider() -> None:
        while not queue.empty():
            r = queue.get_nowait()
            out = await storage.interrupts.decide(
                r.id, "UBOB", Decision.approve(), args_digest=r.args_digest, now=NOW
            )
            assert out.status == "recorded"

    started = time.perf_counter()
    await asyncio.gather(*(decider() for _ in range(50)))
    decisions_per_s = total / (time.perf_counter() - started)

    # Baseline in the same run: the same 50 clients doing the cheapest one-round-trip
    # read of the same records, the ceiling for anything that costs one round trip.
    for r in recs:
        queue.put_nowait(r)

    async def reader() -> None:
        while not queue.empty():
            r = queue.get_nowait()
            await storage.client.raw.hget(storage.keys.record(r.id), "state")

    started = time.perf_counter()
    await asyncio.gather(*(reader() for _ in range(50)))
    reads_per_s = total / (time.perf_counter() - started)
    await storage.client.raw.flushdb()
    await storage.close()
    page_1k, sweep_1k = await scale_costs(url, 1_000)
    page_100k, sweep_100k = await scale_costs(url, 100_000)
    return {
        "round_trips_per_decision": statistics.median(rt for rt, _ in decide_rt),
        "round_trips_first_decision_with_script_load": decide_rt[0][0],
        "server_commands_per_decision": statistics.median(sc for _, sc in decide_rt),
        "round_trips_per_lifecycle": life_rt[0],
        "server_commands_per_lifecycle": life_rt[1],
        "round_trips_first_lifecycle_with_script_loads": cold_life[0],
        "round_trips_per_lifecycle_reposted_from_outbox": repost_rt[0],
        "decisions_per_s_50_concurrent": round(decisions_per_s),
        "baseline_hget_per_s_50_concurrent": round(reads_per_s),
        "decisions_over_baseline": round(decisions_per_s / reads_per_s, 2),
        "channel_page_ms_1k": round(page_1k, 3),
        "channel_page_ms_100k": round(page_100k, 3),
        "channel_page_ratio_100k_over_1k": round(page_100k / page_1k, 2),
        "expiry_sweep_100_due_ms_1k": round(sweep_1k, 3),
        "expiry_sweep_100_due_ms_100k": round(sweep_100k, 3),
        "expiry_sweep_ratio_100k_over_1k": round(sweep_100k / sweep_1k, 2),
    }


async def memory_per_interrupt(url: str) -> tuple[int, int]:
    """(used_memory bytes per pending interrupt, of which its record key) over 10k pending,
    each asked by a run of its own (an agent's run usually asks once), on a fresh server:
    after a flush, memory the server frees lazily in the background would make them look
    smaller. The record's share is what deleting the records frees
    (``MEMORY USAGE`` leaves out part of a hash's overhead); the rest is index entries."""
    storage = await connect(url, prefix="bench")
    raw = storage.client.raw

    async def used() -> int:
        return int((await raw.info("memory"))["used_memory"])

    await raw.config_set("lazyfree-lazy-user-del", "no")  # DEL frees before it answers
    before = await used()
    await fill(storage, 10_000, tag="m", expires_in=timedelta(days=1), per_run=1)
    filled = await used()
    records = [k async for k in raw.scan_iter(match="bench:run:*:int:*", count=1000)]
    for start in range(0, len(records), 500):
        await raw.delete(*records[start : start + 500])
    freed = filled - await used()
    await raw.flushdb()
    await storage.close()
    return round((filled - before) / 10_000), round(freed / 10_000)


async def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        async with EmbeddedRedis(Path(data_dir) / "single") as url:
            storage = await connect(url, prefix="bench")
            info = await storage.client.raw.info("server")
            await storage.close()
            server = info.get("server_name", "redis")
            version = f"{server} {info.get(f'{server}_version', info['redis_version'])}"
            per_pending, record_bytes = await memory_per_interrupt(url)
            single = await measure(url)
        cluster = EmbeddedCluster(Path(data_dir) / "cluster")
        try:
            clustered = await measure(await asyncio.to_thread(cluster.start))
        finally:
            cluster.stop()

    figures = {
        "server": version,
        **single,
        "bytes_per_pending_interrupt": per_pending,
        "record_bytes_per_interrupt": record_bytes,
        **{f"cluster_{name}": value for name, value in clustered.items()},
    }
    report(figures)


if __name__ == "__main__":
    usage("bench.storage", __doc__).parse_args(sys.argv[1:])
    asyncio.run(main())
