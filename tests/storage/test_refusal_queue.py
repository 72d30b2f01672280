"""A click's refusal is queued in the step that stores it, until the step acknowledging the
click as told takes it off: a decider that dies in between leaves it to whoever claims it
once its lease lapses; a click that counts after all leaves nothing queued."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from storage_helpers import DIGEST, NOW, make_record

from agent_runtime.interrupts import Decision
from storage import Storage
from storage.records import InterruptRecord
from storage.refusals import Refusal
from storage.sweeps import POST_LEASE

LAPSED = NOW + POST_LEASE


async def _posted(storage: Storage, **policy: object) -> InterruptRecord:
    record = await storage.interrupts.create_interrupt(make_record(**policy))
    posted = await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.0001", now=NOW)
    assert posted is not None
    return posted


def _refusal(record: InterruptRecord, click: str, user: str = "UMALLORY") -> Refusal:
    return Refusal(record_id=record.id, click=click, user=user, channel="CAPPROVALS")


async def _click(
    storage: Storage, record: InterruptRecord, user: str, refusal: Refusal, *, click_id: str
) -> str | None:
    outcome = await storage.interrupts.decide(
        record.id,
        user,
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0001",
        click_id=click_id,
        untold=(refusal, LAPSED),
    )
    return outcome.reason if outcome.status == "refused" else outcome.status


async def test_a_refusal_whose_decider_died_is_claimed_once_its_lease_lapses(
    storage: Storage,
) -> None:
    record = await _posted(storage)
    refusal = _refusal(record, "click1")
    assert await _click(storage, record, "UMALLORY", refusal, click_id="click1") == "not_allowed"

    assert await storage.refusals.claim(NOW) == []  # its decider may still tell it
    [leased] = await storage.refusals.claim(LAPSED)
    assert (leased.refusal, leased.reason) == (refusal, "not_allowed")
    assert await storage.refusals.claim(LAPSED) == []  # leased to that caller now
    await storage.refusals.done(leased)
    assert await storage.refusals.claim(LAPSED + timedelta(hours=1)) == []
    # Deciding the click again is a replay: nothing is queued again.
    assert await _click(storage, record, "UMALLORY", refusal, click_id="click1") == "replayed"
    assert await storage.refusals.claim(LAPSED + timedelta(hours=1)) == []


async def test_a_refusal_held_by_its_teller_is_not_claimed_and_is_taken_off_once_told(
    storage: Storage,
) -> None:
    """Its teller renews the lease it was given while Slack is slow; a renewal of a lease
    that is no longer its own (told, or queued again) changes nothing."""
    record = await _posted(storage)
    await _click(storage, record, "UMALLORY", _refusal(record, "click1"), click_id="click1")
    [leased] = await storage.refusals.claim(LAPSED)
    later = leased.leased_until + POST_LEASE
    shard, member = leased.shard, leased.member
    assert not await storage.refusals.hold(shard, member, LAPSED, later)  # not its lease
    assert await storage.refusals.hold(shard, member, leased.leased_until, later)
    assert await storage.refusals.claim(leased.leased_until) == []  # held past that
    await storage.refusals.done(replace(leased, leased_until=later))
    assert await storage.refusals.claim(later + timedelta(hours=1)) == []
    assert not await storage.refusals.hold(shard, member, later, later + POST_LEASE)


async def test_a_refusal_acknowledged_as_told_is_not_claimed(storage: Storage) -> None:
    record = await _posted(storage)
    await storage.clicks.append(
        record_id=record.id,
        digest=DIGEST,
        user_id="UMALLORY",
        channel_id="CAPPROVALS",
        message_ts="1700.0001",
        action_id="approve",
        clicked_at=NOW,
        trigger_id="trigger1",
    )
    shard = storage.keys.shard_of_record(record.id)
    [entry] = await storage.clicks.claim("decider", shard=shard, count=10)
    refusal = _refusal(record, entry.click_id)
    assert await _click(storage, record, "UMALLORY", refusal, click_id=entry.click_id) == (
        "not_allowed"
    )

    await storage.clicks.done([entry], told=[refusal])
    assert await storage.refusals.claim(LAPSED + timedelta(hours=1)) == []


async def test_a_click_that_counts_once_its_groups_are_looked_up_again_leaves_nothing_queued(
    storage: Storage,
) -> None:
    record = await _posted(storage, allowed_users=(), allowed_groups=("S0OPS",))
    refusal = _refusal(record, "click1", user="UDAVE")
    assert await _click(storage, record, "UDAVE", refusal, click_id="click1") == "not_allowed"
    regrouped = await storage.interrupts.set_group_members(
        record, ["UDAVE"], now=NOW, asked_by="UDAVE"
    )
    assert regrouped is not None

    assert await _click(storage, record, "UDAVE", refusal, click_id="click1-regrouped") == (
        "recorded"
    )
    assert await storage.refusals.claim(LAPSED + timedelta(hours=1)) == []
