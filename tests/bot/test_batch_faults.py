"""A batch click that cannot simply decide every item: an item forgotten or damaged, items
refused or decided already another way, Redis answering late: each told, the card true."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from batch_agents import FILES, spec
from batch_items import decide_item
from harness import ALICE, BOB, CAROL, CHANNEL, Harness, card_now

from agent_runtime import Decision
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.redraws import update_message
from bot.ui.refusals import UNCONFIRMED
from storage.errors import StorageTimeoutError, StorageUnavailableError
from storage.outcomes import DecideOutcome
from storage.queries import Batch


async def test_an_items_record_gone_shifts_no_tick_onto_another_item(make_bot: Any) -> None:
    """An item decided days ago and since forgotten (decided records are kept 7 days):
    the card's numbers stay the items' own, so unticking 4 excludes item 4, not item 5."""
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    page = await storage.queries.pending_for_channel(CHANNEL, limit=50)
    second, decided = await decide_item(bot, FILES[1], Decision.approve())
    assert decided.record is not None
    await update_message(bot.services, decided.record)
    await storage.client.raw.delete(storage.keys.record(second.id))  # forgotten since

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({3}))
    await bot.slack.wait_for(
        lambda: "Excluded by" in str(card_now(bot)["blocks"]), what="the card after the click"
    )
    shown = str(card_now(bot)["blocks"])
    assert f"4. {FILES[3]}: Excluded by <@{ALICE}>" in shown
    assert f"5. {FILES[4]}: Approved by <@{ALICE}>" in shown
    states = {
        r.interrupt["tool_call"]["args"]["path"]: r.state
        for r in (await storage.queries.many([r.id for r in page.records]))[0]
    }
    assert states[FILES[3]] == "denied" and states[FILES[4]] == states[FILES[2]] == "approved"


async def test_a_damaged_item_is_reported_and_the_rest_of_the_batch_is_decided(
    make_bot: Any,
) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    page = await storage.queries.pending_for_channel(CHANNEL, limit=50)
    damaged = next(r for r in page.records if r.interrupt["tool_call"]["args"]["path"] == FILES[20])
    await storage.client.raw.hset(storage.keys.record(damaged.id), "voters", "not json")

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["text"].startswith("1 of 40 items: This request's stored data is damaged")
    others = [r.id for r in page.records if r.id != damaged.id]
    decided, _ = await storage.queries.many(others)
    assert {r.state for r in decided} == {"approved"} and len(decided) == 39
    entries = await storage.audit.read(count=500)
    assert [(e.event, e.record_id) for e in entries if e.event == "damaged"] == [
        ("damaged", damaged.id)
    ]
    assert bot.services.metrics.damaged_records == 1
    assert deleted == []  # the run waits for its last item


async def test_an_item_too_damaged_to_read_is_reported_too(make_bot: Any) -> None:
    """Damaged where the bot reads it (not only the decision script): told and audited,
    not silently left out."""
    bot: Harness = await make_bot(spec=spec([]))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    page = await storage.queries.pending_for_channel(CHANNEL, limit=50)
    damaged = next(r for r in page.records if r.interrupt["tool_call"]["args"]["path"] == FILES[20])
    await storage.client.raw.hset(storage.keys.record(damaged.id), "votes", "not json")

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["text"].startswith("Item 21 of this card could not be read back")
    entries = await storage.audit.read(count=500)
    assert [(e.event, e.record_id) for e in entries if e.event == "damaged"] == [
        ("damaged", damaged.id)
    ]
    decided, _ = await storage.queries.many([r.id for r in page.records if r.id != damaged.id])
    assert {r.state for r in decided} == {"approved"} and len(decided) == 39


async def test_refusals_for_more_than_one_reason_are_told_as_a_count(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=spec([]))
    await bot.start(requested_by=CAROL)
    store = bot.services.storage.interrupts
    together = store.decide_together

    async def two_refused(*args: Any, **kwargs: Any) -> Any:
        outcomes, damaged = await together(*args, **kwargs)
        outcomes[:2] = [
            DecideOutcome(status="refused", reason="already_decided"),
            DecideOutcome(status="refused", reason="expired"),
        ]
        return outcomes, damaged

    store.decide_together = two_refused  # type: ignore[method-assign]
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["text"] == (
        "2 of 40 items were not decided, for more than one reason; "
        "the card shows where each stands."
    )


async def test_a_batch_decision_redis_confirmed_late_is_not_called_unrecorded(
    make_bot: Any,
) -> None:
    """Redis runs "Approve selected" but its answer times out: the clicker is told it is
    not confirmed (not that nothing was recorded), and the card is redrawn from storage
    rather than left offering the buttons of a batch that was decided."""
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    interrupts = bot.services.storage.interrupts
    decide_together = interrupts.decide_together

    async def answered_too_late(*args: Any, **kwargs: Any) -> Any:
        await decide_together(*args, **kwargs)
        raise StorageTimeoutError("Redis did not answer in time")

    interrupts.decide_together = answered_too_late  # type: ignore[method-assign]
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    await bot.services.background.idle()
    assert [n["text"] for n in bot.slack.called("chat.postEphemeral")] == [UNCONFIRMED]
    await bot.finished()
    bot.clock.advance(timedelta(minutes=1))
    await Scheduler(bot.services).redraw_cards()
    assert card_now(bot)["blocks"][0]["text"]["text"] == "Decided: delete_file, 40 calls"


async def test_a_batch_decided_while_redis_fails_its_read_back_has_its_card_redrawn(
    make_bot: Any,
) -> None:
    """ "Approve selected" lands, then Redis fails the read of the decided items: the card
    is redrawn from storage once it answers, not left offering buttons on a decided batch."""
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    decide_together, many = storage.interrupts.decide_together, storage.queries.many
    decided: list[bool] = []

    async def decide_then_note(*args: Any, **kwargs: Any) -> Any:
        result = await decide_together(*args, **kwargs)
        decided.append(True)
        return result

    async def unreachable_after_the_decision(ids: Any) -> Any:
        if decided:
            raise StorageUnavailableError("connection refused")
        return await many(ids)

    storage.interrupts.decide_together = decide_then_note  # type: ignore[method-assign]
    storage.queries.many = unreachable_after_the_decision  # type: ignore[method-assign]
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.services.background.idle()
    assert decided
    storage.queries.many = many  # type: ignore[method-assign]
    await bot.finished()
    bot.clock.advance(timedelta(minutes=1))
    await Scheduler(bot.services).redraw_cards()
    assert card_now(bot)["blocks"][0]["text"]["text"] == "Decided: delete_file, 40 calls"


async def test_items_decided_first_in_more_than_one_way_are_not_all_called_approved(
    make_bot: Any,
) -> None:
    """Bob's "Deny all" read the items just before Alice's "Approve selected" (one item
    unticked) decided them: he is not told they were all approved, as the first was."""
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted, FILES[:3]))
    await bot.start(requested_by=CAROL)
    queries = bot.services.storage.queries
    read = queries.led_by
    raced: list[str] = []

    async def alice_decides_after_the_read(lead_id: str) -> Batch | None:
        batch = await read(lead_id)
        if not raced:
            raced.append(lead_id)
            await bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({1}))
            await bot.slack.wait_calls("chat.update")
        return batch

    queries.led_by = alice_decides_after_the_read  # type: ignore[method-assign]
    await bot.batch_click(ids.BATCH_DENY, user=BOB)
    await bot.slack.wait_calls("chat.postEphemeral")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["user"] == BOB
    assert told["text"] == (
        "3 of 3 items were decided already, not all the same way; the card shows how."
    ), told["text"]
