"""The stack a chaos scenario runs on: a Redis, the sandbox and real ``signoff`` processes,
and what the channel shows of their cards."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from bot.ui import ids
from sandbox import Sandbox
from sandbox.entities import Message
from storage import EmbeddedRedis

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
        return [m for m in ws.history(CHANNEL) if ids.APPROVE in str(m.blocks) or is_decided(m)]

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


def is_decided(message: Message) -> bool:
    text = str(message.blocks)
    return ids.APPROVE not in text and "Approved" in text


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
