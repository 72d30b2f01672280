"""The demo's workspace as its users see it: starting and stopping the demo, finding its
cards and clicking them; shared by the demo's end-to-end test files."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from demo_process import DemoProcess

from sandbox import SandboxClient

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"
GENERAL, OPS = "C0GENERAL", "C0OPS"
APPROVE = "signoff.approve"
State = dict[str, Any]


def find_button(message: State, action_id: str) -> State | None:
    """The block and action ids that click ``message``'s button ``action_id``, if it has one."""
    for block in message.get("blocks") or []:
        for element in block.get("elements") or []:
            if block["type"] == "actions" and element.get("action_id") == action_id:
                return {"block_id": block["block_id"], "action_id": action_id}
    return None


def headed(header: str, *, pending: bool) -> Callable[[State], State | None]:
    """A probe for the latest message under ``header``, with or without its buttons."""

    def probe(state: State) -> State | None:
        for message in reversed(state.get("messages") or []):
            heads = [
                b["text"]["text"] for b in message.get("blocks") or [] if b["type"] == "header"
            ]
            if any(header in h for h in heads) and bool(find_button(message, APPROVE)) == pending:
                return message
        return None

    return probe


def thread_says(text: str) -> Callable[[State], bool]:
    """A probe for a thread with a message saying ``text``."""
    return lambda state: any(text in m["text"] for m in state.get("thread") or [])


async def approve(slack: SandboxClient, user: str, channel: str, message: State) -> State:
    """``user`` clicks Approve on ``message``; what the click was answered."""
    button = find_button(message, APPROVE)
    assert button is not None, message
    return await slack.click(user, channel=channel, message_ts=message["ts"], **button)


async def start_demo(data_dir: Path) -> DemoProcess:
    """``python -m demo`` on ``data_dir``, returned once it has printed its address."""
    return await asyncio.to_thread(DemoProcess.start, data_dir)


async def stop_demo(demo: DemoProcess) -> float:
    """Ctrl-C the demo; the seconds it took to exit cleanly, keeping what was pending."""
    code, seconds, stderr = await asyncio.to_thread(demo.stop)
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert f"What was pending is kept in {demo.data_dir}" in stderr
    return seconds
