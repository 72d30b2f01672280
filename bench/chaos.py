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
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from redis.asyncio import Redis

from bench.report import report
from bot.ui import ids
from bot.ui.refusals import STORAGE_DOWN, UNCONFIRMED
from sandbox import Sandbox
from sandbox.entities import Message
from storage import EmbeddedRedis

from .chaos_agents import QUICK_EXPIRY, STEPS

ROOT = Path(__file__).resolve().parents[1]
SIGNOFF = Path(sys.executable).parent / "signoff"
CHANNEL = "C0GENERAL"  # the sandbox's default workspace has it, and anyone in it
ALICE, BOB = "U0ALICE", "U0BOB"


class Stack:
    """A Redis, the sandbox and the ``signoff`` processes of one scenario."""

    def __init__(self, sandbox: Sandbox, redis: EmbeddedRedis, workdir: Path) -> None:
        self.sandbox, self.redis, self.workdir = sandbox, redis, workdir
        self.log = workdir / "chaos.log"
        self.processes: list[subprocess.Popen[bytes]] = []

    def env(self, port: int) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SLACK_BOT_TOKEN": self.sandbox.bot_token,
            "SLACK_SIGNING_SECRET": self.sandbox.signing_secret,
            "SIGNOFF_SLACK_API_URL": self.sandbox.api_url,
            "REDIS_URL": self.redis.url,
            "SIGNOFF_AGENTS": "bench.chaos_agents",
            "SIGNOFF_CHANNEL": CHANNEL,
            "SIGNOFF_HOST": "127.0.0.1",
            "SIGNOFF_PORT": str(port),
            "SIGNOFF_CHAOS_LOG": str(self.log),
        }

    async def start(self, *args: str, **env: str) -> tuple[subprocess.Popen[bytes], int]:
        """Start ``signoff <args>`` (with ``env`` added); for ``serve``, once it is healthy."""
        port = _free_port()
        environment = {**self.env(port), **env}
        process = _spawn([str(SIGNOFF), *args], env=environment, out=self.workdir / "out")
        self.processes.append(process)
        if args[0] == "serve":
            await _until_healthy(f"http://127.0.0.1:{port}/healthz", process)
        return process, port

    async def serve(self, *args: str) -> int:
        """Start ``signoff serve <args>`` and have the sandbox deliver to it; its port."""
        _, port = await self.start("serve", *args)
        self.deliver_to(port)
        return port

    def deliver_to(self, port: int) -> None:
        self.sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait()

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill(process)

    def lines(self, kind: str) -> list[list[str]]:
        """The agent's log lines of ``kind`` (``start`` or ``effect``), split."""
        if not self.log.exists():
            return []
        rows = [line.split() for line in self.log.read_text().splitlines()]
        return [row[1:] for row in rows if row and row[0] == kind]

    def cards(self) -> list[Message]:
        """The request messages in the channel (with buttons or decided)."""
        ws = self.sandbox.workspace
        return [m for m in ws.history(CHANNEL) if ids.APPROVE in str(m.blocks) or _decided(m)]

    def pending_cards(self) -> list[Message]:
        return [m for m in self.sandbox.workspace.history(CHANNEL) if ids.APPROVE in str(m.blocks)]

    def finished_posts(self, cards: list[Message]) -> int:
        """How many "Finished" replies the cards' threads hold (one each, when all is well)."""
        replies = [r for c in cards for r in self.sandbox.workspace.replies(CHANNEL, c.ts)]
        return sum(r.text.startswith("Finished") for r in replies)

    def finished(self, card: Message) -> bool:
        replies = self.sandbox.workspace.replies(CHANNEL, card.ts)
        return any(r.text.startswith("Finished") for r in replies)

    async def runs(
        self, count: int, *, within: float = 60, agent: str = "cleanup"
    ) -> list[Message]:
        """Start ``count`` runs with /signoff; their cards, once all are posted."""
        before = len(self.cards())
        for _ in range(count):
            await self.sandbox.interactions.slash_command(
                ALICE, channel=CHANNEL, command="/signoff", text=f"run {agent} now"
            )
        await self.sandbox.wait_for(lambda: len(self.cards()) >= before + count, within=within)
        return self.pending_cards()

    async def approve(self, card: Message, user: str = BOB) -> float:
        """Click Approve on ``card``; seconds until Slack had its ack."""
        started = time.perf_counter()
        await self.sandbox.interactions.click(
            user, channel=CHANNEL, message_ts=card.ts, action_id=ids.APPROVE
        )
        return time.perf_counter() - started


@asynccontextmanager
async def stack() -> AsyncIterator[Stack]:
    workdir = Path(tempfile.mkdtemp(prefix="signoff-chaos-"))
    redis = EmbeddedRedis(workdir / "redis")
    redis.start()
    try:
        async with Sandbox() as sandbox:
            running = Stack(sandbox, redis, workdir)
            try:
                yield running
            finally:
                running.close()
    finally:
        redis.stop()


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
            "concurrent_decisions": sum(_decided(m) for m in s.cards()),
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


async def frozen() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        cards = await s.runs(10)
        assert s.redis.pid is not None
        os.kill(s.redis.pid, signal.SIGSTOP)
        try:
            acks = await asyncio.gather(*(s.approve(c) for c in cards))
            await asyncio.sleep(max(0.0, 8 - max(acks)))  # keep Redis frozen for 8 s in all
        finally:
            os.kill(s.redis.pid, signal.SIGCONT)
        # A click Redis never confirmed may be lost: its clicker was told to look at the
        # card and click again if it does not change. Wait for those that were kept.
        with contextlib.suppress(TimeoutError):
            await s.sandbox.wait_for(lambda: all(s.finished(c) for c in cards), within=30)
        notes = [e.text for e in s.sandbox.workspace.ephemerals(BOB, CHANNEL)]
        decided = sum(_decided(m) for m in s.cards())
        finished = sum(s.finished(c) for c in cards)
        # "Nothing was recorded" would be untrue for a click that was carried out.
        untrue = max(0, decided - (len(cards) - notes.count(STORAGE_DOWN)))
        return {
            "frozen_clicks": len(cards),
            "frozen_ack_max_s": round(max(acks), 2),
            "frozen_acks_over_3s": sum(a > 3 for a in acks),
            "frozen_told_unconfirmed": notes.count(UNCONFIRMED),
            "frozen_decided": decided,
            "frozen_runs_finished": finished,
            "frozen_still_pending": len(s.pending_cards()),
            "frozen_untrue_messages": untrue,
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
            "replicas_decisions": sum(_decided(m) for m in s.cards()),
            "replicas_tool_runs": len(effects),
            "replicas_tool_starts": len(s.lines("start")),
            "replicas_finished_posts": s.finished_posts(cards),
        }


async def redis() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        cards = await s.runs(30)
        assert s.redis.pid is not None
        outages = (_kill_redis, _shutdown_redis)
        for batch, outage in enumerate(outages):
            clicks = [s.approve(c) for c in cards[batch * 15 : batch * 15 + 15]]
            await asyncio.gather(*clicks, _outage(s.redis, outage, after=0.02))
        notes = [e.text for e in s.sandbox.workspace.ephemerals(BOB, CHANNEL)]
        told_lost = notes.count(STORAGE_DOWN)
        decided = await _settled(s, cards, refused=told_lost)
        return {
            "redis_clicks": len(cards),
            "redis_outages": len(outages),
            "redis_told_not_recorded": told_lost,
            "redis_decided": decided,
            "redis_lost": len(cards) - told_lost - decided,
        }


async def storm() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        faults = s.sandbox.faults

        async def weather(seconds: float) -> None:
            until = time.monotonic() + seconds
            while time.monotonic() < until:  # keep faults queued for every method
                faults.rate_limit(count=3, retry_after=1)
                faults.server_error(count=3, status=503)
                await asyncio.sleep(0.5)  # the storm's own pace, not a wait for work
            faults.clear()

        storm_task = asyncio.create_task(weather(30))
        for _ in range(10):
            await s.sandbox.interactions.slash_command(
                ALICE, channel=CHANNEL, command="/signoff", text="run cleanup now"
            )
        await s.sandbox.wait_for(lambda: len(s.cards()) >= 10, within=120)
        cards = s.pending_cards()
        for card in cards:
            await s.approve(card)
        await storm_task
        await s.sandbox.wait_for(lambda: all(s.finished(c) for c in cards), within=120)
        failed = [c for c in faults.calls() if not c.ok]
        return {
            "storm_seconds_of_faults": 30,
            "storm_failed_calls": len(failed),
            "storm_cards_posted": len(s.cards()),
            "storm_runs_finished": sum(s.finished(c) for c in cards),
            "storm_finished_posts": s.finished_posts(cards),
            "storm_decided": sum(_decided(m) for m in s.cards()),
        }


async def ratelimit() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        s.sandbox.faults.rate_limit("chat.postMessage", retry_after=40)
        started = time.monotonic()
        [card] = await s.runs(1, within=90)
        waited = time.monotonic() - started
        cards = s.cards()
        refused = [c for c in s.sandbox.faults.calls("chat.postMessage") if not c.ok]
        return {
            "ratelimit_retry_after_s": 40,
            "ratelimit_cards_posted": len(cards),
            "ratelimit_refused_posts": len(refused),
            "ratelimit_posted_after_s": round(waited, 1),
            "ratelimit_card_is_live": int(ids.APPROVE in str(card.blocks)),
        }


async def _settled(s: Stack, cards: list[Message], *, refused: int) -> int:
    """How many of ``cards`` end decided, once all but the ``refused`` ones are."""
    await s.sandbox.wait_for(
        lambda: sum(_decided(c) for c in s.cards()) >= len(cards) - refused, within=90
    )
    return sum(_decided(c) for c in s.cards())


async def _outage(
    server: EmbeddedRedis, stop: Callable[[EmbeddedRedis], None], *, after: float
) -> None:
    """Stop Redis ``after`` seconds into a batch of clicks, then start it again at once."""
    await asyncio.sleep(after)  # a moment into the clicks, not a wait for work
    stop(server)
    await asyncio.to_thread(server.stop)  # reaps the dead server
    await asyncio.to_thread(server.start)


def _kill_redis(server: EmbeddedRedis) -> None:
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)


def _shutdown_redis(server: EmbeddedRedis) -> None:
    path = server.url.removeprefix("unix://").split("?")[0]
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        sock.sendall(b"SHUTDOWN\r\n")
        sock.recv(64)  # the server closes the connection once its data is on disk


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
                lambda: all(_decided(c) or _expired(c) for c in s.cards()), within=60
            )
            figures[f"expiry_{decider}_clicked_in_time"] = len(cards)
            figures[f"expiry_{decider}_approved"] = sum(_decided(c) for c in s.cards())
            figures[f"expiry_{decider}_expired"] = sum(_expired(c) for c in s.cards())
    return figures


def _decided(message: Message) -> bool:
    text = str(message.blocks)
    return ids.APPROVE not in text and "Approved" in text


def _expired(message: Message) -> bool:
    return "Expired" in str(message.blocks)


def _spawn(args: list[str], *, env: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("ab") as output:
        return subprocess.Popen(args, env=env, stdout=output, stderr=output)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _until_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession() as http, asyncio.timeout(30):
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"signoff exited while starting ({process.returncode})")
            try:
                async with http.get(url) as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)  # the process is booting: poll its health endpoint


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


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(SCENARIOS)))
