"""Decisions an app makes in its own UI: past expiry only a denial, the first decision
wins, and the round the app closed is its own to run unless it hands it over or lapses."""

from __future__ import annotations

from datetime import timedelta

import redis.asyncio as aioredis
from storage_helpers import DIGEST, NOW, later, make_record, snapshot

from agent_runtime.interrupts import Decision
from storage import Storage
from storage.decisions import APP_HOLD


async def test_past_its_expiry_a_record_takes_only_a_denial_from_the_app(
    storage: Storage, raw: aioredis.Redis, key_prefix: str
) -> None:
    record = await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
    before = await snapshot(raw, key_prefix)
    status, stored = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.approve(), now=later(hours=1)
    )
    assert status == "expired" and stored is not None and stored.state == "pending"
    assert await snapshot(raw, key_prefix) == before  # nothing changed
    status, denied = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.reject("too late"), now=later(hours=1)
    )
    assert status == "recorded_last" and denied is not None and denied.state == "denied"


async def test_a_decision_in_the_app_wins_once_and_queues_no_resume(storage: Storage) -> None:
    await storage.resume.ensure_group()
    record = await storage.interrupts.create_interrupt(make_record())
    status, decided = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.approve(), now=later(minutes=1)
    )
    assert status == "recorded_last" and decided is not None  # the run's last card
    assert decided.state == "approved" and decided.decided_by == "app"
    assert await storage.resume.lag() == 0  # the app resumes the run itself
    click = await storage.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=later(minutes=2)
    )
    assert (click.status, click.reason, click.decided_by) == ("refused", "already_decided", "app")
    again, _ = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.reject("no"), now=later(minutes=3)
    )
    assert again == "already_decided"
    assert (
        await storage.interrupts.decide_in_app("run_x/int_y", "app", Decision.approve(), now=NOW)
    )[0] == "unknown"


async def test_the_round_an_app_closed_is_its_own_unless_it_lets_go(storage: Storage) -> None:
    """An app's answers to a run's cards, the last one by the app: the app holds the round
    (no resume job) until it finishes it, or hands it over once (its run failed), or its
    hold lapses (its process died) and the round is handed over then."""
    await storage.resume.ensure_group()
    decide_in_app, interrupts = storage.interrupts.decide_in_app, storage.interrupts
    first, second, third = (make_record(call_id=c) for c in ("c1", "c2", "c3"))
    await interrupts.create_interrupts([first, second, third])
    assert (await decide_in_app(first.id, "app", Decision.approve(), now=NOW))[0] == "recorded"
    await interrupts.decide(third.id, "UBOB", Decision.reject("no"), args_digest=DIGEST, now=NOW)
    assert await storage.resume.lag() == 0  # c2 still waits
    assert (await decide_in_app(second.id, "app", Decision.approve(), now=NOW))[0] == (
        "recorded_last"
    )
    assert await storage.resume.lag() == 0  # the app runs the round
    assert await interrupts.lapsed_app_rounds(NOW) == []
    assert await interrupts.hand_over(second.id, now=NOW) != ""  # its run failed
    assert await interrupts.hand_over(second.id, now=NOW) == ""  # once
    assert not await interrupts.app_round_done(second.id)
    [job] = await storage.resume.claim("w1", shard=storage.keys.shard_of("run_1"))
    assert job.record_ids == tuple(sorted([first.id, second.id, third.id]))

    finished, lapsed = make_record(run_id="run_2"), make_record(run_id="run_3")
    for record in (finished, lapsed):
        await interrupts.create_interrupt(record)
        await decide_in_app(record.id, "app", Decision.approve(), now=NOW)
    assert await interrupts.app_round_done(finished.id)  # the app ran it to its end
    await interrupts.renew_app_round(lapsed.id, now=NOW + timedelta(minutes=1))
    assert await interrupts.lapsed_app_rounds(NOW + APP_HOLD) == []  # renewed
    assert await interrupts.lapsed_app_rounds(NOW + APP_HOLD + timedelta(minutes=1)) == [lapsed.id]
    assert await interrupts.hand_over(lapsed.id, now=NOW) != ""
    assert await interrupts.hand_over(finished.id, now=NOW) == ""
    shards = storage.keys.all_shards
    queued = [j.run_id for n in shards for j in await storage.resume.claim("w1", shard=n)]
    assert queued == ["run_3"]
