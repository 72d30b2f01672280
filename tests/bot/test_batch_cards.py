"""Batch approval through the real Bolt app: forty calls of one tool in one turn are one
card; unticking three and clicking "Approve selected" runs 37, gives the agent 3
rejections naming who excluded them, audits 40 decisions and updates the one card."""

from __future__ import annotations

import asyncio
from asyncio import Barrier
from datetime import UTC, datetime
from typing import Any

from batch_agents import FILES, spec
from batch_items import decide_item
from blockkit import check_message
from harness import ALICE, BOB, CAROL, CHANNEL, Harness, card_now

from agent_runtime import (
    Decision,
    Interrupt,
    ToolCall,
)
from bot.agents.policy import Policy
from bot.runs.approvers import MAX_BATCH, batched
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.batch_message import batch_message
from storage.approvers import ApproverPolicy
from storage.outcomes import ExpiryResult
from storage.queries import Batch
from storage.records import InterruptRecord


async def test_exclude_three_of_forty_runs_37_and_updates_one_card(make_bot: Any) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    cards = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert len(cards) == 1  # one card, not forty
    card = cards[0]
    assert card["blocks"][0]["text"]["text"] == "Approval needed: delete_file, 40 calls"
    boxes = [b for b in card["blocks"] if b.get("block_id", "").startswith(ids.BATCH_BLOCK)]
    assert [len(b["elements"][0]["options"]) for b in boxes] == [10, 10, 10, 10]
    assert len(card["blocks"]) <= 50 and "/tmp/old-39.log" in str(card["blocks"])

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({2, 5, 17}))
    final = await bot.finished()
    assert final.startswith("Finished: deleted 37; ['Excluded from the batch by U0ALICE']")
    assert sorted(deleted) == sorted(p for i, p in enumerate(FILES) if i not in {2, 5, 17})

    audit = await bot.services.storage.audit.read(count=500)
    decided = [e for e in audit if e.event in ("approved", "denied")]
    assert len(decided) == 40 and sum(e.event == "denied" for e in decided) == 3
    # The card is redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_calls("chat.update")
    updates = bot.slack.called("chat.update")
    assert updates and {u["ts"] for u in updates} == {bot.message_ts()}  # one card, in place
    shown = card_now(bot)
    assert shown["blocks"][0]["text"]["text"] == "Decided: delete_file, 40 calls"
    text = str(shown["blocks"])
    assert text.count(f"Excluded by <@{ALICE}>") == 3 and text.count("Approved by") == 37
    assert "3. /tmp/old-02.log: Excluded" in text
    assert not any(b.get("block_id", "").startswith(ids.BATCH_BLOCK) for b in shown["blocks"])
    noted = f"<@{CAROL}> :ballot_box_with_check:"
    # The requester's note is posted in the background, after the click is decided.
    await bot.slack.wait_for(
        lambda: any(t.startswith(noted) for t in bot.thread()), what="the requester's note"
    )
    notes = [t for t in bot.thread() if t.startswith(noted)]
    assert notes == [
        f"<@{CAROL}> :ballot_box_with_check: 40 calls of `delete_file` decided: "
        "37 approved, 3 excluded"
    ]


async def test_deny_all_runs_nothing_and_a_quorum_applies_to_the_batch(make_bot: Any) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted, min_approvals=2))
    await bot.start(requested_by=CAROL)
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({0}))
    await bot.slack.wait_for(
        lambda: "1 of 2 approvals" in str(card_now(bot)["blocks"]), what="the quorum's progress"
    )
    assert deleted == []
    await bot.batch_click(ids.BATCH_DENY, user=BOB)
    final = await bot.finished()
    assert final.startswith("Finished: deleted 0")
    assert deleted == []
    await bot.slack.wait_for(  # the card's redraw may follow the run's end in the thread
        lambda: str(card_now(bot)["blocks"]).count(f"Denied by <@{BOB}>") == 39, what="the redraw"
    )
    assert str(card_now(bot)["blocks"]).count(f"Excluded by <@{ALICE}>") == 1


async def test_the_same_click_again_decides_only_the_items_left(make_bot: Any) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    # A process that carried out "Deny all" stopped after deciding one item.
    third, outcome = await decide_item(
        bot, FILES[3], Decision.reject("Denied with the whole batch")
    )
    assert outcome.status == "recorded", outcome
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    assert (await bot.finished()).startswith("Finished: deleted 39")
    assert sorted(deleted) == sorted(p for i, p in enumerate(FILES) if i != 3)
    audit = await storage.audit.read(count=500)
    decided = [e for e in audit if e.event in ("approved", "denied")]
    assert len(decided) == 40  # one decision per item: the decided one was not decided again
    assert [(e.event, e.user_id) for e in decided if e.record_id == third.id] == [("denied", BOB)]


async def test_a_double_click_and_a_deny_all_at_once_decide_each_item_once(
    make_bot: Any,
) -> None:
    """Alice double-clicks "Approve selected" (three unticked) while Bob clicks "Deny all":
    every item is decided once, by whichever click reached it first, the run resumes
    once, and each approved call runs once."""
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    unticked = frozenset({2, 5, 17})
    await asyncio.gather(
        bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=unticked),
        bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=unticked),
        bot.batch_click(ids.BATCH_DENY, user=BOB),
    )
    final = await bot.finished()
    audit = await bot.services.storage.audit.read(count=500)
    decided = [e for e in audit if e.event in ("approved", "denied")]
    assert len(decided) == 40 and len({e.record_id for e in decided}) == 40
    approved = [e for e in decided if e.event == "approved"]
    assert all(e.user_id == ALICE for e in approved)
    assert len(deleted) == len(set(deleted)) == len(approved)
    assert final.startswith(f"Finished: deleted {len(approved)}")
    storage = bot.services.storage
    streams = [storage.keys.resume_stream(shard) for shard in storage.keys.all_shards]
    assert sum([await storage.client.raw.xlen(s) for s in streams]) == 1  # one resume


async def test_a_stranger_decides_nothing_and_the_items_expire_together(make_bot: Any) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    await bot.batch_click(ids.BATCH_APPROVE, user=CAROL)  # the requester, not an approver
    await bot.slack.wait_calls("chat.postEphemeral")
    refusal = bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert refusal.startswith("You are not among the approvers of this request")
    assert "Approval needed" in card_now(bot)["blocks"][0]["text"]["text"]

    updates = len(bot.slack.called("chat.update"))
    bot.clock.advance(Policy(users=(ALICE,)).expires_after * 2)
    await Scheduler(bot.services).tick()
    assert len(bot.slack.called("chat.update")) == updates + 1  # one redraw for 40 expiries
    assert card_now(bot)["blocks"][0]["text"]["text"] == "Decided: delete_file, 40 calls"
    assert str(card_now(bot)["blocks"]).count("Expired, not approved") == 40
    assert (await bot.finished()).startswith("Finished: deleted 0")
    assert deleted == []


async def test_two_schedulers_expiring_one_batch_between_them_post_one_note(
    make_bot: Any,
) -> None:
    """Two schedulers each expire half of a batch's items, then each finds all of them
    decided: the requester is told "40 calls decided" once, not by both, and the expiries
    are counted 40 times, each by the scheduler that made it."""
    bot: Harness = await make_bot(spec=spec([]))
    await bot.start(requested_by=CAROL)
    interrupts = bot.services.storage.interrupts
    expire_due, one_at_a_time, both_expired = interrupts.expire_due, asyncio.Lock(), Barrier(2)
    expired: list[int] = []

    async def half_each(now: datetime, **_: Any) -> list[ExpiryResult]:
        async with one_at_a_time:
            results = await expire_due(now, limit=20)
        expired.append(len(results))
        await both_expired.wait()  # neither tells before the other has expired its half
        return results

    interrupts.expire_due = half_each  # type: ignore[method-assign]
    bot.clock.advance(Policy(users=(ALICE,)).expires_after * 2)
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())
    assert expired == [20, 20]
    notes = [t for t in bot.thread() if t.startswith(f"<@{CAROL}> :ballot_box_with_check:")]
    assert notes == [
        f"<@{CAROL}> :ballot_box_with_check: 40 calls of `delete_file` decided: "
        "40 expired, not approved"
    ]
    assert bot.services.metrics.decisions["expired"] == 40


NOW = datetime(2026, 11, 25, tzinfo=UTC)


def _item(n: int, path: str) -> InterruptRecord:
    """A pending approval of ``delete_file(path)``, the ``n``th call of one run."""
    call = ToolCall(id=f"c{n}", name="delete_file", args={"path": path})
    interrupt = Interrupt(
        id=f"int_{n}", name="approval", tool_call=call, allowed_decisions=("approve", "reject")
    )
    return InterruptRecord.new(
        interrupt,
        run_id="run_1",
        thread_id="thread_1",
        agent="cleanup",
        requested_by=CAROL,
        policy=ApproverPolicy(allowed_users=(ALICE,)),
        now=NOW,
        channel=CHANNEL,
    )


def test_a_full_batch_of_long_items_fits_slacks_limits_and_shows_every_item() -> None:
    records = []
    for n in range(100):
        record = _item(n, f"/{n:03d}/" + "x" * 500)
        if n % 2:  # half decided: a line each; half waiting: a checkbox each
            record = record.model_copy(
                update={"state": "approved", "decided_by": ALICE, "decided_at": NOW}
            )
        records.append(record)
    message = batch_message(Batch.of(records))
    check_message(message.text, message.blocks)
    shown = str(message.blocks)
    assert all(f"{n + 1}. /{n:03d}/xxx" in shown for n in range(100))  # none cut off


def test_more_than_a_cards_worth_of_calls_go_on_further_cards() -> None:
    records = [_item(n, f"/{n}") for n in range(MAX_BATCH + 50)]
    cards = batched(records, lambda tool: True)
    leads = [r for r in cards if r.batch_items]
    assert [len(lead.batch_items) for lead in leads] == [MAX_BATCH, 50]
    assert all(r.batch in {lead.id for lead in leads} for r in cards)
