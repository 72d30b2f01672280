"""A running ``signoff serve`` with a named client, and the gates a test starts against it:
each the installed console script, gating a shell command that leaves a mark."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from procs import (
    ALICE,
    BOB,
    GENERAL,
    SIGNOFF,
    start_signoff,
    until_healthy,
)

from sandbox import Sandbox
from sandbox.entities import Message

MARK = 'echo "$SIGNOFF_DECIDED_BY limit=$SIGNOFF_PARAM_LIMIT" >> "$MARKS"; echo cleaned up'


@dataclass
class Stack:
    sandbox: Sandbox
    env: dict[str, str]
    log: Path
    marks: Path
    port: int
    server: subprocess.Popen[bytes]
    gates: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def stop(self) -> None:
        """SIGTERM, then wait (in a thread: the sandbox answers on this event loop)."""
        self.server.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(self.server.wait, 15)
        assert code == 0, self.log.read_text()

    def serve(self) -> None:
        self.server = start_signoff("serve", env=self.env, log=self.log)

    async def healthy(self) -> None:
        await until_healthy(f"http://127.0.0.1:{self.port}/healthz", self.server, self.log)

    async def gate(self, *args: str, command: str | None = MARK) -> asyncio.subprocess.Process:
        """A gate; one still running when its test ends (a failed one) is killed then."""
        tail = ["--", "sh", "-c", command] if command else []
        gate = await asyncio.create_subprocess_exec(
            str(SIGNOFF),
            "gate",
            "--channel",
            GENERAL,
            "--approvers",
            f"{ALICE},{BOB}",
            "--title",
            "Delete 42 stale volumes",
            "--editable",
            "limit=42",
            *args,
            *tail,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its command too is killed with it
        )
        self.gates.append(gate)
        return gate

    async def waiting(self, gate: asyncio.subprocess.Process) -> str:
        """The gate's first line, once it says it waits (its card is posted and recorded)."""
        assert gate.stderr is not None
        line = await asyncio.wait_for(gate.stderr.readline(), 30)
        assert b"waiting for approval" in line, line
        return line.decode()

    async def card(self, count: int = 1) -> Message:
        ws = self.sandbox.workspace

        def cards() -> list[Message]:
            return [m for m in ws.history(GENERAL) if "Delete 42 stale volumes" in str(m.blocks)]

        found = await self.sandbox.wait_for(lambda: len(cards()) >= count or None, within=15)
        assert found
        return cards()[-1]

    async def click(self, card: Message, action: str, user: str = ALICE) -> None:
        ack = await self.sandbox.interactions.click(
            user, channel=GENERAL, message_ts=card.ts, action_id=action
        )
        assert ack.status == "acked", ack

    async def asked_again(self, card: Message) -> Message:
        """The card in ``card``'s thread that asks again (its check's output changed)."""
        ws = self.sandbox.workspace
        return await self.sandbox.wait_for(
            lambda: next((m for m in ws.replies(GENERAL, card.ts)[1:] if m.blocks), None),
            within=15,
        )

    def replies(self, card: Message) -> list[str]:
        return [m.text for m in self.sandbox.workspace.replies(GENERAL, card.ts)[1:]]
