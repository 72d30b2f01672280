"""A batch card whose lead item's stored record is damaged: the other items are still
drawn and decided from the card, the damaged one is reported by its number and left
exactly as stored; only when the damage is the lead's list of items is the card refused."""

from __future__ import annotations

from typing import Any

from batch_agents import FILES, spec
from harness import ALICE, CAROL, CHANNEL, Harness

from bot.ui import ids
from bot.ui.batch_message import DAMAGED_ITEM
from bot.ui.cards import card_from_record
from bot.ui.refusals import DAMAGED_BATCH
from sandbox.blocks import checked_view
from storage.records import InterruptRecord


def _drawn(bot: Harness) -> dict[str, Any]:
    """The batch card as last drawn in Slack."""
    updates = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()]
    return updates[-1] if updates else bot.posted(0)


async def _damage_lead(bot: Harness, field: str, value: str) -> tuple[str, list[InterruptRecord]]:
    """Damage one field of the batch's lead record; its key and the items as they were,
    the lead first."""
    storage = bot.services.storage
    page = await storage.queries.pending_for_channel(CHANNEL, limit=50)
    [lead] = [r for r in page.records if r.batch_items]
    key = storage.keys.record(lead.id)
    await storage.client.raw.hset(key, field, value)
    return key, [lead, *(r for r in page.records if r.id != lead.id)]


async def test_a_damaged_lead_leaves_the_other_items_decidable_from_the_card(
    make_bot: Any,
) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    key, items = await _damage_lead(bot, "votes", "not json")
    stored = await storage.client.raw.hgetall(key)

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({4}))
    await bot.slack.wait_for(
        lambda: "Excluded by" in str(_drawn(bot)["blocks"]), what="the card after the click"
    )
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["text"] == (
        "Item 1 of this card could not be read back from storage (its data is damaged), so "
        "it was not decided and is left as stored. An operator can see the damage in the "
        "audit trail (`signoff audit`)."
    )
    assert await storage.client.raw.hgetall(key) == stored  # nothing of it lost or changed
    decided, unreadable = await storage.queries.many([r.id for r in items])
    assert unreadable == [items[0].id] and len(decided) == 39
    states = {r.interrupt["tool_call"]["args"]["path"]: r.state for r in decided}
    assert states.pop(FILES[4]) == "denied" and set(states.values()) == {"approved"}
    entries = await storage.audit.read(count=500)
    assert [(e.event, e.record_id) for e in entries if e.event == "damaged"] == [
        ("damaged", items[0].id)
    ]

    card = _drawn(bot)
    text = str(card["blocks"])
    assert (
        card["blocks"][0]["text"]["text"] == "Decided but for damaged items: delete_file, 40 calls"
    )
    assert f"1. {DAMAGED_ITEM}" in text and f"5. {FILES[4]}: Excluded by <@{ALICE}>" in text
    assert f"2. {FILES[1]}: Approved by <@{ALICE}>" in text and text.count("Approved by") == 38
    assert not any(t.startswith(f"<@{CAROL}> :ballot_box_with_check:") for t in bot.thread())
    assert deleted == []  # the run waits for its damaged item

    # Full details (as a compact card offers it, naming an item read back) says so too.
    await bot.click(ids.FULL_ARGS, card_from_record(items[1]).button_value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    [opened] = bot.slack.called("views.open")
    shown = str(checked_view(opened["view"])["blocks"])
    assert f"*1.* {DAMAGED_ITEM}" in shown and "*40.*" in shown and FILES[39] in shown


async def test_a_lead_whose_list_of_items_is_damaged_says_which_and_changes_nothing(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(spec=spec([]))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    key, items = await _damage_lead(bot, "batch_items", "[not json")
    stored = await storage.client.raw.hgetall(key)

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["text"] == DAMAGED_BATCH
    assert DAMAGED_BATCH.startswith("Item 1 of this card is damaged in storage")
    assert await storage.client.raw.hgetall(key) == stored
    decided, _ = await storage.queries.many([r.id for r in items[1:]])
    assert {r.state for r in decided} == {"pending"} and len(decided) == 39
    entries = await storage.audit.read(count=500)
    assert [(e.event, e.record_id) for e in entries if e.event == "damaged"] == [
        ("damaged", items[0].id)
    ]
