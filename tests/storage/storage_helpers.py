"""Builders and probes shared by the storage tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio as aioredis

from agent_runtime.interrupts import Interrupt
from agent_runtime.messages import ToolCall, args_digest
from storage import ApproverPolicy, InterruptRecord, Storage

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DIGEST = args_digest({"path": "/tmp/old"})
"""The digest of the call ``make_record`` guards: a decision on it must carry this."""


def make_record(
    *,
    run_id: str = "run_1",
    name: str = "delete_files",
    call_id: str = "call_1",
    requested_by: str = "UREQ",
    now: datetime = NOW,
    channel: str | None = "CAPPROVALS",
    **policy: Any,
) -> InterruptRecord:
    """A pending record guarding ``delete_files(path='/tmp/old')``."""
    interrupt = Interrupt(
        id=f"int_{call_id}",
        name=name,
        reason="delete 3 files",
        tool_call=ToolCall(id=call_id, name=name, args={"path": "/tmp/old"}),
        allowed_decisions=("approve", "reject"),
        created_at=now,
    )
    policy.setdefault("allowed_users", ("UALICE", "UBOB", "UCAROL"))
    return InterruptRecord.new(
        interrupt,
        run_id=run_id,
        thread_id=f"thread_{run_id}",
        agent="cleanup",
        requested_by=requested_by,
        policy=ApproverPolicy(**policy),
        now=now,
        channel=channel,
    )


async def snapshot(raw: aioredis.Redis, prefix: str) -> dict[bytes, bytes | None]:
    """Every key under ``prefix`` with its serialized value, for byte-for-byte comparisons."""
    keys = sorted([k async for k in raw.scan_iter(match=f"{prefix}:*")])
    return {k: await raw.dump(k) for k in keys}


async def wait_for(
    condition: Callable[[], Awaitable[bool]], *, within: float = 5.0, what: str = "condition"
) -> None:
    """Poll ``condition`` until true; fail after ``within`` seconds (no fixed sleeps)."""
    deadline = time.monotonic() + within
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.01)


def later(**delta: float) -> datetime:
    return NOW + timedelta(**delta)


def run_key(storage: Storage, index: Callable[[int], str], run_id: str = "run_1") -> str:
    """The key of ``index`` in the shard of run ``run_id`` (on a single Redis: the one)."""
    return index(storage.keys.shard_of(run_id))
