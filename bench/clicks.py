"""Click benchmark: Signoff's real server against a Bolt app that only acks.

Starts a real Redis and, each in its own process, a local stand-in for the Slack Web
API, Signoff's HTTP server acknowledging clicks only (``signoff serve --no-workers``),
Signoff's click decider and resume workers (``signoff worker``, scaled out as in
production) and a minimal Bolt app whose action listener only calls ``ack()``.
Sends signed button clicks for distinct interrupts to both apps at three loads: 50
clients as fast as the acks come back (``c50``), one client as fast as the acks come
back (``c1_b2b``), and one click in flight whose consequences (message updated, tool
run, run's end posted, resume job acknowledged) finish before the next is sent (``c1``:
concurrency 1 for a pipeline). Prints clicks/s and ack latency for both apps and
Signoff's click-to-resumed-tool latency; at the first two loads the clicks queue up
behind the resumes, so that latency measures the workers' throughput. The last line is
one JSON object with every figure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bench.usage import usage
from bot.process.heap import freeze_startup_heap
from bot.process.settings import Settings
from bot.process.wiring import make_services
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.slack.events import EVENTS_PATH
from bot.ui import ids
from sandbox.signing import signature_headers
from storage import EmbeddedRedis, connect

from .click_servers import (
    APPROVERS,
    CHANNEL,
    RESUMED,
    SECRET,
    SETTLED,
    TOKEN,
    WORKERS,
    spec,
    start,
)

CONCURRENCY = 50
CLICKS = 2000
SUSTAINED = 6000
SINGLE_CLICKS = 300
WARM = 20


# -- signed clicks -----------------------------------------------------------------------


def click(value: str, user: str, message_ts: str) -> tuple[bytes, dict[str, str]]:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0"},
        "api_app_id": "A0",
        "team": {"id": "T0", "domain": "bench"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": CHANNEL},
        "channel": {"id": CHANNEL, "name": "bench"},
        "message": {"ts": message_ts, "text": "", "blocks": []},
        "response_url": "https://hooks.slack.invalid/1",
        "trigger_id": "t.1",
        "actions": [
            {
                "type": "button",
                "action_id": ids.APPROVE,
                "block_id": ids.ACTIONS_BLOCK,
                "value": value,
                "action_ts": "1.0",
            }
        ],
    }
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    headers = signature_headers(SECRET, body.encode())
    return body.encode(), {**headers, "Content-Type": "application/x-www-form-urlencoded"}


async def drive(
    url: str,
    clicks: list[tuple[bytes, dict[str, str], str]],
    concurrency: int,
    then: Callable[[], Awaitable[None]] | None = None,
) -> tuple[float, list[float], dict[str, float]]:
    """Send ``clicks`` from ``concurrency`` clients, each awaiting ``then()`` after each ack
    before its next click; (elapsed s, ack latencies s, sent-at)."""
    latencies: list[float] = []
    sent: dict[str, float] = {}
    queue: asyncio.Queue[tuple[bytes, dict[str, str], str]] = asyncio.Queue()
    for item in clicks:
        queue.put_nowait(item)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            while not queue.empty():
                body, headers, key = queue.get_nowait()
                started = time.perf_counter()
                sent[key] = time.time()
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"click answered {response.status}")
                latencies.append(time.perf_counter() - started)
                if then is not None:
                    await then()

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return time.perf_counter() - began, latencies, sent


def cpu_waits(pids: dict[str, int]) -> dict[str, float]:
    """Milliseconds so far that each process was ready to run but waited for a CPU (its
    ``schedstat``), and, as ``steal``, that the host ran something else on this
    machine's CPUs (``/proc/stat``): where an ack's tail goes when it is not our code."""
    waits = {
        name: int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e6
        for name, pid in pids.items()
    }
    steal_ticks = int(Path("/proc/stat").read_text().split()[8])
    return {**waits, "steal": steal_ticks * 1000 / os.sysconf("SC_CLK_TCK")}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def post_interrupts(services: Any, count: int) -> list[tuple[str, str]]:
    """Start ``count`` runs; (button value, message ts) of each posted interrupt."""
    for i in range(0, count, 100):
        batch = range(i, min(i + 100, count))
        place = Place(channel=CHANNEL, thread_ts=None, requested_by="U0REQUESTER")
        await asyncio.gather(*(start_run(services, "ops", f"svc-{n}", place=place) for n in batch))
    posted: list[tuple[str, str]] = []
    cursor = None
    while True:
        page = await services.storage.queries.pending_for_channel(CHANNEL, limit=500, cursor=cursor)
        posted += [(f"{r.id} {r.args_digest}", str(r.message_ts)) for r in page.records]
        if page.next_cursor is None:
            return posted
        cursor = page.next_cursor


async def main() -> dict[str, Any]:
    data_dir = tempfile.TemporaryDirectory(prefix="signoff-bench-")
    redis = EmbeddedRedis(Path(data_dir.name))
    redis_url = redis.start()
    processes = []
    try:
        slack, slack_port = start("slack", redis_url=redis_url)
        processes.append(slack)
        api_url = f"http://127.0.0.1:{slack_port}/api/"
        storage = await connect(redis_url, prefix="bench")
        client = AsyncWebClient(token=TOKEN, base_url=api_url, session=aiohttp.ClientSession())
        services = make_services(client=client, storage=storage, specs=[spec()])
        posted = await post_interrupts(services, WARM + CLICKS + SUSTAINED + 2 * SINGLE_CLICKS)
        floor, floor_port = start("floor", api_url)
        signoff, signoff_port = start("signoff", api_url, redis_url)
        worker, _ = start("worker", api_url, redis_url)
        processes += [floor, signoff, worker]
        # This process measures the acks: a full pass of its own garbage collector over
        # the thousands of runs it started would stall every click in flight (35 ms).
        freeze_startup_heap()
        assert redis.pid is not None
        figures = await measure(
            storage,
            posted,
            floor=(f"http://127.0.0.1:{floor_port}{EVENTS_PATH}", {"server": floor.pid}),
            signoff=(
                f"http://127.0.0.1:{signoff_port}{EVENTS_PATH}",
                {"server": signoff.pid, "redis": redis.pid},
            ),
        )
        await client.session.close()  # type: ignore[union-attr]
        await storage.close()
        return figures
    finally:
        for process in processes:
            process.terminate()
            process.join(10)
        redis.stop()
        data_dir.cleanup()


async def measure(
    storage: Any,
    posted: list[tuple[str, str]],
    *,
    floor: tuple[str, dict[str, int]],
    signoff: tuple[str, dict[str, int]],
) -> dict[str, Any]:
    """Every figure; ``floor`` and ``signoff`` are each app's URL and the pids whose CPU
    waits are measured over its burst (this process, the client, is added)."""
    (floor_url, floor_pids), (signoff_url, signoff_pids) = floor, signoff
    watched = {"floor": floor_pids, "signoff": signoff_pids}
    figures: dict[str, Any] = {}
    warm, rest = posted[:WARM], posted[WARM:]
    # Bolt's first request calls auth.test; warm both apps.
    await drive(floor_url, clicks_for(warm), 1)
    await drive(signoff_url, clicks_for(warm), 1, partial(settled, storage, 1))
    many, rest = rest[:CLICKS], rest[CLICKS:]
    sustained, rest = rest[:SUSTAINED], rest[SUSTAINED:]
    back_to_back, one_by_one = rest[:SINGLE_CLICKS], rest[SINGLE_CLICKS : 2 * SINGLE_CLICKS]
    resume: dict[str, list[float]] = {}
    # Clicks sent as fast as the acks come back: a burst and a long run from 50 clients,
    # then one client (back to back).
    levels = (("c50", many, CONCURRENCY), ("sustained", sustained, CONCURRENCY))
    for level, items, concurrency in (*levels, ("c1_b2b", back_to_back, 1)):
        sent: dict[str, float] = {}
        for name, url in (("floor", floor_url), ("signoff", signoff_url)):
            started = time.perf_counter()
            pids = {"client": os.getpid(), **watched[name]}
            waited = cpu_waits(pids)
            elapsed, latencies, sent = await drive(url, clicks_for(items), concurrency)
            if level == "c50":
                figures[f"{name}_clicks_per_s"] = round(len(latencies) / elapsed)
                figures[f"{name}_ack_p50_ms_c50"] = round(pct(latencies, 0.50), 3)
                figures[f"{name}_ack_p99_ms_c50"] = round(pct(latencies, 0.99), 3)
                for who, ms in cpu_waits(pids).items():
                    figures[f"{name}_{who}_cpu_wait_ms_c50"] = round(ms - waited[who], 1)
            elif level == "sustained":
                figures[f"{name}_clicks_per_s_sustained"] = round(len(latencies) / elapsed)
                figures[f"{name}_ack_p99_ms_sustained"] = round(pct(latencies, 0.99), 3)
            else:
                figures[f"{name}_ack_p50_ms_c1_b2b"] = round(pct(latencies, 0.50), 3)
        await settled(storage, len(items))
        if level == "sustained":
            # Decided, message updated and run resumed: the whole pipeline's rate.
            figures["signoff_settled_per_s_sustained"] = round(
                len(items) / (time.perf_counter() - started)
            )
        else:
            resume[level] = await resume_latencies(storage, items, sent)
    # Concurrency 1: one click in flight, the next only once its consequences are done.
    for name, url in (("floor", floor_url), ("signoff", signoff_url)):
        then = partial(settled, storage, 1) if name == "signoff" else None
        _, latencies, sent = await drive(url, clicks_for(one_by_one), 1, then)
        figures[f"{name}_ack_p50_ms_c1"] = round(pct(latencies, 0.50), 3)
    resume["c1"] = await resume_latencies(storage, one_by_one, sent)
    for level, values in resume.items():
        figures[f"click_to_resume_p50_ms_{level}"] = round(pct(values, 0.50), 2)
        figures[f"click_to_resume_p99_ms_{level}"] = round(pct(values, 0.99), 2)
    figures["throughput_ratio"] = round(
        figures["signoff_clicks_per_s"] / figures["floor_clicks_per_s"], 3
    )
    figures["throughput_ratio_sustained"] = round(
        figures["signoff_clicks_per_s_sustained"] / figures["floor_clicks_per_s_sustained"], 3
    )
    return figures


def clicks_for(items: list[tuple[str, str]]) -> list[tuple[bytes, dict[str, str], str]]:
    """Signed clicks on ``items`` (button value, message ts), by approvers in turn."""
    out = []
    for n, (value, ts) in enumerate(items):
        body, headers = click(value, APPROVERS[n % len(APPROVERS)], ts)
        out.append((body, headers, value))
    return out


async def settled(storage: Any, clicks: int) -> None:
    """Wait until the last ``clicks`` clicks on Signoff have no consequence left to come:
    each message updated, each run's end posted, every resume job acknowledged.

    One click waits in BLPOP, woken the moment it settles; a burst polls every 20 ms, so
    the benchmark takes no CPU from the servers while they catch up.
    """
    raw, deadline = storage.client.raw, time.time() + 120
    if clicks == 1:
        for _ in range(2):
            if await raw.blpop([SETTLED], timeout=120) is None:
                raise RuntimeError("a click's message update or run end did not come in 120 s")
    else:
        while int(await raw.llen(SETTLED)) < 2 * clicks:
            if time.time() > deadline:
                raise RuntimeError("the clicks' updates and run ends did not come in 120 s")
            await asyncio.sleep(0.02)
        await raw.lpop(SETTLED, 2 * clicks)
    # The job is acknowledged one Redis call after the run's end is posted.
    while await storage.resume.lag():
        if time.time() > deadline:
            raise RuntimeError("resume jobs were not acknowledged within 120 s")
        await asyncio.sleep(0.001)


async def resume_latencies(
    storage: Any, items: list[tuple[str, str]], sent: dict[str, float]
) -> list[float]:
    """Click-to-tool latencies (s) of clicks that have ``settled``: when each tool ran
    (the tool records it) minus when its click was sent."""
    records, _ = await storage.queries.many([v.split(" ")[0] for v, _ in items])
    targets: dict[str, str] = {}
    for record in records:
        call = record.runtime_interrupt.tool_call
        assert call is not None
        targets[f"{record.id} {record.args_digest}"] = call.args["target"]
    values = await storage.client.raw.hmget(RESUMED, [targets[v] for v, _ in items])
    return [float(ran) - sent[v] for (v, _), ran in zip(items, values, strict=True)]


SETUP = f"""\
How each app runs: each serves HTTP from one process (asyncio, default event loop); this
process sends both the same signed clicks through one aiohttp client.
  floor    Bolt AsyncApp, process_before_response=True; the action listener only acks.
  signoff  the bot's aiohttp app (signoff serve --no-workers): each click appended to the
           Redis click stream before Bolt, then acked; plus one worker process (signoff
           worker at SIGNOFF_WORKER_NICE={Settings().worker_nice}, its default, so in the
           idle scheduling class: one click decider (Redis decide, chat.update),
           {WORKERS} resume workers).
           Shared: one Valkey, one fake Web API (idle class too: Slack's work is not on
           this host in production).
Loads: c50 = a burst of {CLICKS} clicks from 50 clients back to back; sustained = {SUSTAINED}
clicks the same way (the decider falls behind; the acks do not wait for it);
c1_b2b = 1 client back to back; c1 = 1 click in flight, the next sent once the previous
one's consequences are done (for the floor, its ack).
Machine: {os.cpu_count()} cores, shared by every process above.
CPU waits over each app's c50 burst: ms its server (and Redis), and this client, were
ready to run but waited for a CPU; steal: ms the host gave this machine's CPUs to others.
"""


if __name__ == "__main__":
    usage("bench.clicks", __doc__).parse_args(sys.argv[1:])
    result = asyncio.run(main())
    print(SETUP)
    print(f"{'figure':<32} value")
    for key, value in result.items():
        print(f"{key:<32} {value}")
    print(json.dumps(result))
