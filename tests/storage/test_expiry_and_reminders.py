"""Expiry, escalation and reminders (issue 3, test 3)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from storage_helpers import DIGEST, NOW, later, make_record, run_key, wait_for

from agent_runtime.interrupts import Decision
from storage import Storage
from storage.sweeps import CLICKS_HOLD_EXPIRY


async def test_two_racing_sweepers_expire_once_and_record_it_honestly(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
    assert await storage.interrupts.expire_due(later(minutes=59)) == []
    first, second = await asyncio.gather(
        storage.interrupts.expire_due(later(hours=1)), storage.interrupts.expire_due(later(hours=1))
    )
    results = first + second
    assert len(results) == 1 and results[0].outcome == "expired"
    assert results[0].resume_job_id is not None
    assert await storage.client.raw.xlen(run_key(storage, storage.keys.resume_stream)) == 1
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.state == "expired" and stored.decided_by is None
    response = stored.response()
    assert response is not None and response.decision is not None
    assert response.decision.type == "reject" and response.metadata["state"] == "expired"
    late = await storage.interrupts.decide(
        record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=later(hours=2)
    )
    assert (late.reason, late.state) == ("already_decided", "expired")


async def test_a_click_racing_two_expiry_sweeps_gets_one_outcome_and_one_resume(
    storage: Storage,
) -> None:
    """A click made a moment before the expiry, sent at once with two sweeps of that
    moment: exactly one of them settles each request, and each run gets one resume job."""
    for n in range(40):
        record = make_record(run_id=f"run_{n}", expires_in=timedelta(hours=1))
        await storage.interrupts.create_interrupt(record)
        click = storage.interrupts.decide(
            record.id,
            "UALICE",
            Decision.approve(),
            args_digest=DIGEST,
            now=later(hours=1) - timedelta(milliseconds=1),
        )
        sweeps = [storage.interrupts.expire_due(later(hours=1)) for _ in range(2)]
        click_first = n % 2 == 0  # half the rounds send the click first, half the sweeps
        results = await asyncio.gather(*([click, *sweeps] if click_first else [*sweeps, click]))
        clicked = results[0] if click_first else results[-1]
        swept = [r for batch in (results[1:] if click_first else results[:-1]) for r in batch]
        settled = [r for r in swept if r.record.id == record.id]
        assert (clicked.status == "recorded") + len(settled) == 1, (n, clicked, settled)
    jobs = 0
    for shard in storage.keys.all_shards:
        jobs += await storage.client.raw.xlen(storage.keys.resume_stream(shard))
    assert jobs == 40


async def test_click_after_expiry_time_is_refused_before_the_sweep(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
    out = await storage.interrupts.decide(
        record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=later(hours=1)
    )
    assert (out.status, out.reason, out.state) == ("refused", "expired", "pending")


async def test_escalation_extends_once_and_lets_the_target_decide(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(
            expires_in=timedelta(hours=1),
            on_expiry="escalate",
            escalate_to_users=("UBOSS",),
            escalate_to_channel="CESCALATE",
        )
    )
    [escalated] = await storage.interrupts.expire_due(later(hours=1))
    assert escalated.outcome == "escalated" and escalated.record.escalated
    page = await storage.queries.pending_for_user("UBOSS")
    assert [r.id for r in page.records] == [record.id]
    [expired] = await storage.interrupts.expire_due(later(hours=2))
    assert expired.outcome == "expired"


async def test_escalated_approver_may_decide(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(
            expires_in=timedelta(hours=1), on_expiry="escalate", escalate_to_users=("UBOSS",)
        )
    )
    await storage.interrupts.expire_due(later(hours=1))
    out = await storage.interrupts.decide(
        record.id, "UBOSS", Decision.approve(), args_digest=DIGEST, now=later(hours=1, minutes=1)
    )
    assert out.status == "recorded"


async def test_each_reminder_is_handed_out_once_in_schedule_order(storage: Storage) -> None:
    await storage.interrupts.create_interrupt(
        make_record(
            expires_in=timedelta(hours=5),
            reminders=(timedelta(hours=1), timedelta(hours=3), timedelta(hours=6)),
        )
    )
    assert await storage.interrupts.due_reminders(later(minutes=30)) == []
    a, b = await asyncio.gather(
        storage.interrupts.due_reminders(later(hours=1)),
        storage.interrupts.due_reminders(later(hours=1)),
    )
    assert [r.number for r in a + b] == [1]
    [second] = await storage.interrupts.due_reminders(later(hours=4))
    assert second.number == 2 and second.record.next_reminder_at is None  # 6h is past expiry
    assert await storage.interrupts.due_reminders(later(hours=7)) == []


async def test_a_sweep_reloads_the_scripts_a_restarted_server_forgot(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
    await storage.client.raw.script_flush()  # as after a restart without persistence
    [expired] = await storage.interrupts.expire_due(later(hours=1))
    assert expired.record.id == record.id and expired.outcome == "expired"


async def test_a_queued_click_no_decider_takes_holds_the_expiry_back_ten_minutes_at_most(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
    await storage.clicks.append(
        record_id=record.id,
        digest=DIGEST,
        user_id="UALICE",
        channel_id="CAPPROVALS",
        message_ts="1.000001",
        action_id="approve",
        clicked_at=later(minutes=59),
    )
    raw, waiting = storage.client.raw, storage.keys.clicks_waiting(record.id)
    assert await raw.pttl(waiting) == -1  # the hold starts when the expiry falls due

    async def sweep_leaves_it_pending(at: timedelta) -> None:
        assert await storage.interrupts.expire_due(NOW + at) == []
        stored = await storage.queries.get(record.id)
        assert stored is not None and stored.state == "pending"

    await sweep_leaves_it_pending(timedelta(hours=1))
    hold = timedelta(milliseconds=await raw.pttl(waiting))
    assert CLICKS_HOLD_EXPIRY - timedelta(seconds=5) < hold <= CLICKS_HOLD_EXPIRY
    # Nine minutes pass on Redis's clock (it cannot be moved: the TTL is cut to what is left).
    await raw.pexpire(waiting, timedelta(minutes=1))
    await sweep_leaves_it_pending(timedelta(hours=1, minutes=9))
    assert await raw.pttl(waiting) <= 60_000  # a later sweep does not extend the hold

    await raw.pexpire(waiting, 1)  # the hold's last minute passes

    async def hold_over() -> bool:
        return await raw.exists(waiting) == 0

    await wait_for(hold_over, what="the hold to end")
    [expired] = await storage.interrupts.expire_due(later(hours=1, minutes=10, seconds=1))
    assert expired.outcome == "expired" and expired.record.state == "expired"


async def test_a_record_damaged_where_the_sweep_cannot_see_it_leaves_the_others_theirs(
    storage: Storage,
) -> None:
    """A field only the Python side reads is damaged: the expiry and reminder sweeps
    report every other record they handled instead of failing the whole pass."""
    records = [
        make_record(
            run_id=f"run_{n}", expires_in=timedelta(hours=2), reminders=(timedelta(hours=1),)
        )
        for n in range(3)
    ]
    for record in records:
        await storage.interrupts.create_interrupt(record)
    damaged = storage.keys.record(records[1].id)
    await storage.client.raw.hset(damaged, "votes", "{not json")
    before = await storage.client.raw.hgetall(damaged)

    reminded = await storage.interrupts.due_reminders(later(hours=1))
    expired = await storage.interrupts.expire_due(later(hours=2))
    assert sorted(r.record.id for r in reminded) == sorted([records[0].id, records[2].id])
    assert sorted(r.record.id for r in expired) == sorted([records[0].id, records[2].id])
    after = await storage.client.raw.hgetall(damaged)
    assert after["votes"] == before["votes"] == "{not json"
