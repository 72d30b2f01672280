"""The undo window: a deciding click is held, undoable, and becomes final (the run's resume
job queued) only when the window ends; an undo racing the window's end gets exactly one
outcome; the hold lives in Redis, so a restart neither loses nor doubles it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from storage_helpers import DIGEST, NOW, later, make_record

from agent_runtime.interrupts import Decision
from storage import Storage, connect

WINDOW = timedelta(seconds=60)


async def _jobs(storage: Storage) -> int:
    """Resume jobs queued, in every shard."""
    streams = [storage.keys.resume_stream(shard) for shard in storage.keys.all_shards]
    return sum([int(await storage.client.raw.xlen(stream)) for stream in streams])


def _undo(storage: Storage, rid: str, user: str, *, now: datetime) -> Any:
    """An Undo click on the (unposted) card of ``rid``."""
    return storage.interrupts.undo(rid, user, now=now, channel="CAPPROVALS", message_ts="")


async def _approve(storage: Storage, rid: str, user: str = "UALICE", *, at: float = 1) -> str:
    outcome = await storage.interrupts.decide(
        rid, user, Decision.approve(), args_digest=DIGEST, now=later(seconds=at)
    )
    return outcome.status


async def test_a_held_approval_resumes_nothing_until_its_window_ends(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(undo_window=WINDOW))
    assert await _approve(storage, record.id) == "held"
    held = await storage.queries.get(record.id)
    assert held is not None and held.state == "pending" and held.held is not None
    assert (held.held.by, held.held.until) == ("UALICE", later(seconds=61))
    assert await _jobs(storage) == 0

    late = await storage.interrupts.decide(
        record.id, "UBOB", Decision.reject("no"), args_digest=DIGEST, now=later(seconds=2)
    )
    assert (late.status, late.reason) == ("refused", "held")
    assert await storage.interrupts.expire_due(later(seconds=60)) == []  # not yet
    [released] = await storage.interrupts.expire_due(later(seconds=61))
    assert released.outcome == "released" and released.resume_job_id is not None
    final = released.record
    assert final.state == "approved" and final.decided_by == "UALICE" and final.held is None
    assert final.decided_at == later(seconds=1)  # when the click was made
    assert await _jobs(storage) == 1
    assert await storage.interrupts.expire_due(later(seconds=120)) == []  # released once
    assert await _jobs(storage) == 1
    events = [e.event for e in await storage.audit.read(after="-", count=10)]
    assert events == ["created", "held", "approved"]


async def test_undo_in_the_window_reopens_the_request_and_it_can_be_decided_again(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(make_record(undo_window=WINDOW))
    assert await _approve(storage, record.id, "UALICE") == "held"
    outsider = await _undo(storage, record.id, "UMALLORY", now=later(seconds=5))
    assert (outsider.status, outsider.reason) == ("refused", "not_allowed")
    elsewhere = await storage.interrupts.undo(
        record.id, "UBOB", now=later(seconds=5), channel="COTHER", message_ts="1.2"
    )
    assert (elsewhere.status, elsewhere.reason) == ("refused", "wrong_message")

    undone = await _undo(storage, record.id, "UBOB", now=later(seconds=5))
    assert undone.status == "recorded" and undone.record is not None
    reopened = undone.record
    assert reopened.state == "pending" and reopened.held is None and reopened.votes == ()
    assert reopened.undone is not None
    assert (reopened.undone.by, reopened.undone.decided_by) == ("UBOB", "UALICE")
    assert await storage.interrupts.expire_due(later(seconds=61)) == []  # nothing held
    assert await _jobs(storage) == 0
    again = await _undo(storage, record.id, "UBOB", now=later(seconds=6))
    assert again.reason == "not_held"

    assert await _approve(storage, record.id, "UCAROL", at=70) == "held"
    [released] = await storage.interrupts.expire_due(later(seconds=130))
    assert released.record.decided_by == "UCAROL" and await _jobs(storage) == 1
    events = [e.event for e in await storage.audit.read(after="-", count=10)]
    assert events == ["created", "held", "undone", "held", "approved"]


async def test_an_undo_after_the_window_is_refused_and_the_decision_stands(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(make_record(undo_window=WINDOW))
    await _approve(storage, record.id)
    late = await _undo(storage, record.id, "UALICE", now=later(seconds=61))
    assert (late.status, late.reason) == ("refused", "window_closed")
    [released] = await storage.interrupts.expire_due(later(seconds=61))
    assert released.record.state == "approved" and await _jobs(storage) == 1


async def test_undo_racing_the_windows_end_gets_exactly_one_outcome(storage: Storage) -> None:
    """At the window's edge, Undo clicks made just inside the window and two sweepers
    releasing it: per request, either it was undone (no job, pending again) or released
    (one job), never both, whether they run at once or the sweep lands first."""
    undone = released = 0
    for n in range(40):
        rid = (
            await storage.interrupts.create_interrupt(
                make_record(run_id=f"run_{n}", undo_window=WINDOW)
            )
        ).id
        await _approve(storage, rid)
        edge = later(seconds=61)
        undoing = [
            _undo(storage, rid, user, now=edge - timedelta(milliseconds=1))
            for user in ("UALICE", "UBOB", "UCAROL")
        ]
        sweeping = [storage.interrupts.expire_due(edge) for _ in range(2)]
        if n % 2:  # Undo clicks made inside the window, arriving after the sweep released it
            sweeps = await asyncio.gather(*sweeping)
            undos_made = await asyncio.gather(*undoing)
        else:  # all at once
            undos_made, sweeps = await asyncio.gather(
                asyncio.gather(*undoing), asyncio.gather(*sweeping)
            )
        undos = [u for u in undos_made if u.status == "recorded"]
        releases = [x for sweep in sweeps for x in sweep if x.record.id == rid]
        assert len(undos) + len(releases) == 1, (n, undos_made, sweeps)
        stored = await storage.queries.get(rid)
        assert stored is not None
        if undos:
            undone += 1
            assert stored.state == "pending" and stored.held is None
        else:
            released += 1
            assert stored.state == "approved"
    assert await _jobs(storage) == released
    assert undone + released == 40 and undone > 0 and released > 0


async def test_a_restart_inside_the_window_neither_loses_nor_doubles_the_decision(
    storage: Storage, redis_url: str, key_prefix: str
) -> None:
    record = await storage.interrupts.create_interrupt(make_record(undo_window=WINDOW))
    await _approve(storage, record.id)
    await storage.close()  # the process that took the click is gone
    restarted = await connect(redis_url, prefix=key_prefix)
    try:
        assert await restarted.interrupts.expire_due(later(seconds=30)) == []
        [released] = await restarted.interrupts.expire_due(later(seconds=61))
        assert released.record.state == "approved"
        assert await restarted.interrupts.expire_due(later(seconds=62)) == []
        assert await _jobs(restarted) == 1
    finally:
        await restarted.close()


async def test_an_expiry_falling_inside_the_window_does_not_override_the_decision(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(undo_window=WINDOW, expires_in=timedelta(seconds=30))
    )
    await _approve(storage, record.id, at=20)
    assert await storage.interrupts.expire_due(later(seconds=40)) == []  # held, not expired
    [released] = await storage.interrupts.expire_due(later(seconds=80))
    assert released.outcome == "released" and released.record.state == "approved"
    assert released.record.decided_at > NOW  # type: ignore[operator]
