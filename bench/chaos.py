"""Chaos: real ``signoff`` processes, a real Redis and the sandbox, under the failures an
approval must survive. Every scenario is bounded and on loopback.

- ``concurrent``: 200 clicks on one request at once: one decision, one tool run, 199
  clear refusals.
- ``kill``: 24 approved runs, each resumed by a worker that is killed (SIGKILL) at one
  step of the resume, each of the six steps in turn: every run ends; counted are the
  tool's reruns, the effects that happened twice despite its receipt, and the posts of
  each run's end (at most one each).
- ``frozen``: Redis stopped (SIGSTOP) for 8 s while 10 approvers click: every click is
  acknowledged within Slack's 3 s, and what each clicker was told agrees with what
  happened once Redis is back.
- ``replicas``: three ``signoff serve`` replicas share 300 clicks: 300 decisions, 300 tool
  runs, no run resumed twice.
- ``redis``: Redis killed -9, restarted, shut down, restarted, while 30 approvers click:
  every click Slack saw acknowledged, and not refused as unrecorded, is decided.
- ``storm``: 30 s of 429s and 5xx from Slack while 10 runs start and are approved: each
  card posted once, each run finished once.
- ``ratelimit``: the first card post answered 429 with Retry-After 40: the card is posted
  exactly once, after Slack's wait.
- ``expiry``: approvals clicked a second before a 6 s deadline, with a decider running,
  and with none until after the deadline: each counts, none expires.

Prints a table and, as its last line, one JSON object with every figure.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from bench.report import report
from bench.usage import usage
from sandbox.entities import Message

from .chaos_agents import QUICK_EXPIRY, STEPS
from .chaos_redis import frozen, redis
from .chaos_slack import ratelimit, storm
from .chaos_stack import ALICE, BOB, CHANNEL, Stack, is_decided, stack


async def concurrent() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        [card] = await s.runs(1)
        clicks = [s.approve(card, user=(ALICE, BOB)[i % 2]) for i in range(200)]
        await asyncio.gather(*clicks)
        await s.sandbox.wait_for(lambda: s.finished(card), within=30)
        ws = s.sandbox.workspace

        def refusals() -> int:
            notes = ws.ephemerals(ALICE, CHANNEL) + ws.ephemerals(BOB, CHANNEL)
            return sum(not n.text.startswith("Starting") for n in notes)  # not the /signoff ack

        await s.sandbox.wait_for(lambda: refusals() >= 199, within=30)
        return {
            "concurrent_clicks": 200,
            "concurrent_decisions": sum(is_decided(m) for m in s.cards()),
            "concurrent_tool_runs": len(s.lines("effect")),
            "concurrent_refusals": refusals(),
        }


async def kill() -> dict[str, Any]:
    rounds = 4 * len(STEPS)
    async with stack() as s:
        await s.serve("--no-workers")
        cards = await s.runs(rounds)
        kills = 0
        for round_, card in enumerate(cards):
            # A worker that kills itself at one step of the resume, each step in turn.
            step = STEPS[round_ % len(STEPS)].__name__
            doomed, _ = await s.start("worker", SIGNOFF_CHAOS_DIE_AT=step)
            await s.approve(card)
            try:
                await asyncio.to_thread(doomed.wait, 30)
                kills += 1
            except subprocess.TimeoutExpired:  # it took no job that reached the step
                s.kill(doomed)
        died = time.monotonic()
        for _ in range(2):
            await s.start("worker")
        # A worker killed between claiming a run's end and posting it leaves that end
        # unannounced (posted at most once), so wait for the runs, not for every post.
        async with asyncio.timeout(120):
            while await _ended_runs(s) < rounds:  # noqa: ASYNC110 (Redis has no event for it)
                await asyncio.sleep(0.5)  # the runs' checkpoints are in Redis: poll it
        settled = time.monotonic() - died
        effects = [row[0] for row in s.lines("effect")]
        return {
            "kill_rounds": rounds,
            "kill_steps": len(STEPS),
            "kill_kills": kills,
            "kill_runs_ended": await _ended_runs(s),
            "kill_tool_effects": len(set(effects)),
            "kill_tool_starts": len(s.lines("start")),
            "kill_doubled_effects": len(effects) - len(set(effects)),
            "kill_finished_posts": s.finished_posts(cards),
            "kill_seconds_to_settle_after_the_last_death": round(settled, 1),
        }


async def replicas() -> dict[str, Any]:
    count = 300
    async with stack() as s:
        ports = [await s.serve() for _ in range(3)]
        cards = await s.runs(count, within=180)
        for i, port in enumerate(ports):  # each replica takes a third of the clicks
            s.deliver_to(port)
            await asyncio.gather(*(s.approve(c) for c in cards[i::3]))
        await s.sandbox.wait_for(lambda: all(s.finished(c) for c in cards), within=180)
        effects = [row[0] for row in s.lines("effect")]
        return {
            "replicas_clicks": count,
            "replicas_decisions": sum(is_decided(m) for m in s.cards()),
            "replicas_tool_runs": len(effects),
            "replicas_tool_starts": len(s.lines("start")),
            "replicas_finished_posts": s.finished_posts(cards),
        }


async def _ended_runs(s: Stack) -> int:
    """Runs whose stored session says they ended: the last checkpoint a worker saved."""
    client = Redis.from_url(s.redis.url, decode_responses=True)
    async with client:
        keys = [k async for k in client.scan_iter(match="*:thread:*:session")]
        snapshots = [await client.hget(k, "snapshot") for k in keys]
    return sum(json.loads(x)["status"] == "idle" for x in snapshots if x)


async def expiry() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for decider in ("running", "late"):
        async with stack() as s:
            await s.serve() if decider == "running" else await s.serve("--no-workers")
            cards = await s.runs(5, agent="quick")
            posted = time.monotonic()
            deadline = posted + QUICK_EXPIRY.total_seconds()
            await asyncio.sleep(max(0.0, deadline - 1 - time.monotonic()))  # a second before
            await asyncio.gather(*(s.approve(c) for c in cards))
            if decider == "late":  # deciders and the expiry sweep start after the deadline
                await asyncio.sleep(max(0.0, deadline + 1.5 - time.monotonic()))
                await s.start("worker")
            await s.sandbox.wait_for(
                lambda: all(is_decided(c) or _expired(c) for c in s.cards()), within=60
            )
            figures[f"expiry_{decider}_clicked_in_time"] = len(cards)
            figures[f"expiry_{decider}_approved"] = sum(is_decided(c) for c in s.cards())
            figures[f"expiry_{decider}_expired"] = sum(_expired(c) for c in s.cards())
    return figures


def _expired(message: Message) -> bool:
    return "Expired" in str(message.blocks)


SCENARIOS: dict[str, Callable[[], Any]] = {
    "concurrent": concurrent,
    "kill": kill,
    "frozen": frozen,
    "replicas": replicas,
    "redis": redis,
    "storm": storm,
    "ratelimit": ratelimit,
    "expiry": expiry,
}


async def main(names: list[str]) -> None:
    figures: dict[str, Any] = {}
    for name in names:
        started = time.monotonic()
        figures.update(await SCENARIOS[name]())
        figures[f"{name}_seconds"] = round(time.monotonic() - started, 1)
    report(figures)


def scenarios(argv: list[str]) -> list[str]:
    """The scenarios named on the command line, all when none is; an unknown name is a
    usage error (exit status 2) before any server starts."""
    parser = usage("bench.chaos", __doc__)
    parser.add_argument(
        "names", nargs="*", metavar="SCENARIO", help=f"{', '.join(SCENARIOS)} (default: all)"
    )
    names: list[str] = parser.parse_args(argv).names
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    return names or list(SCENARIOS)


if __name__ == "__main__":
    asyncio.run(main(scenarios(sys.argv[1:])))
