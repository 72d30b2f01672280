"""A click on a batch card after its items' deadline, before the expiry sweep stored what
the deadline does: the click stores each item's expiry itself (once, whoever comes first,
the sweep racing it too), redraws the card with it, and tells the clicker what is stored."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from batch_agents import FILES, spec
from harness import ALICE, CAROL, CHANNEL, Harness

from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import Storage

WAIT = timedelta(minutes=30)
TOLD = {
    "deny": "This request has expired; nothing was approved.",
    "approve": (
        "This request's time is up, so it is approved by default, as its card said; "
        "your click changed nothing."
    ),
}
"""What the late clicker is told, by what the policy does when nobody decides in time."""
STORED = {"deny": ("expired", "expired"), "approve": ("approved", "approved_by_default")}
"""Each item's stored state and its audit entry, by the same."""
CARD = {"deny": "Expired, not approved", "approve": "Approved by default"}
"""What the redrawn card says of each item, by the same."""


async def _late_batch(make_bot: Any, nobody: str, deleted: list[str]) -> tuple[Harness, list[str]]:
    """A batch card of forty calls (and its items' ids), a minute past its deadline, no
    sweep run yet."""
    bot: Harness = await make_bot(
        spec=spec(deleted, expires_after=WAIT, reminders=None, if_nobody_decides=nobody)
    )
    await bot.start(requested_by=CAROL)
    page = await bot.services.storage.queries.pending_for_channel(CHANNEL, limit=50)
    assert len(page.records) == 40
    bot.clock.advance(WAIT + timedelta(minutes=1))
    return bot, [r.id for r in page.records]


def _told(bot: Harness) -> list[str]:
    return [str(n["text"]) for n in bot.slack.called("chat.postEphemeral") if n["user"] == ALICE]


def _card(bot: Harness) -> str:
    updates = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()]
    return str(updates[-1]["blocks"]) if updates else ""


async def _stored(storage: Storage, items: list[str]) -> tuple[set[str], dict[str, list[str]]]:
    """The items' stored states, and the audit trail's expiry entries: the items of each."""
    records, unread = await storage.queries.many(items)
    assert not unread
    expiries: dict[str, list[str]] = {}
    for entry in await storage.audit.read(count=500):
        if entry.event in ("expired", "approved_by_default", "escalated"):
            expiries.setdefault(entry.event, []).append(entry.record_id)
    return {r.state for r in records}, expiries


def _requester_notes(bot: Harness) -> list[str]:
    return [t for t in bot.thread() if t.startswith(f"<@{CAROL}> :ballot_box_with_check:")]


@pytest.mark.parametrize("nobody", ["deny", "approve"])
async def test_a_late_batch_click_stores_every_items_expiry_before_any_sweep(
    make_bot: Any, storage: Storage, nobody: str
) -> None:
    deleted: list[str] = []
    bot, items = await _late_batch(make_bot, nobody, deleted)
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.services.background.idle()

    assert _told(bot) == [TOLD[nobody]]
    states, expiries = await _stored(storage, items)  # already, no sweep has run
    state, entry = STORED[nobody]
    assert states == {state}
    assert sorted(expiries[entry]) == sorted(items) and len(expiries) == 1  # each item once
    assert _card(bot).count(CARD[nobody]) == 40  # the card shows what is stored
    assert bot.services.metrics.decisions["expired"] == 40
    assert _requester_notes(bot) == [
        f"<@{CAROL}> :ballot_box_with_check: 40 calls of `delete_file` decided: "
        f"40 {CARD[nobody].lower()}"
    ]
    final = await bot.finished()
    assert final.startswith(f"Finished: deleted {40 if nobody == 'approve' else 0}")

    await Scheduler(bot.services).tick()  # the sweep after it finds nothing left to do
    await bot.services.background.idle()
    assert sorted((await _stored(storage, items))[1][entry]) == sorted(items)
    assert len(_requester_notes(bot)) == 1
    assert sorted(deleted) == (sorted(FILES) if nobody == "approve" else [])


@pytest.mark.parametrize("sweeps", [20, 40])
async def test_a_sweep_between_a_late_batch_clicks_refusal_and_its_expiries_stores_each_once(
    make_bot: Any, storage: Storage, sweeps: int
) -> None:
    """The sweep expires ``sweeps`` of the items after the click was refused as late and
    before it makes their expiries: each item is expired once, by whoever came first; the
    requester's note is posted once, the clicker told what is stored."""
    bot, items = await _late_batch(make_bot, "deny", [])
    interrupts = bot.services.storage.interrupts
    together, expire_due = interrupts.decide_together, interrupts.expire_due

    async def some(now: Any, **_: Any) -> Any:
        return await expire_due(now, limit=sweeps)

    async def then_the_sweep(*args: Any, **kwargs: Any) -> Any:
        refused = await together(*args, **kwargs)
        assert {o.reason for o in refused[0]} == {"expired"}
        await Scheduler(bot.services).tick()
        return refused

    interrupts.decide_together = then_the_sweep  # type: ignore[method-assign]
    interrupts.expire_due = some  # type: ignore[method-assign]
    await bot.batch_click(ids.BATCH_DENY, user=ALICE)
    await bot.services.background.idle()

    assert _told(bot) == [TOLD["deny"]]
    states, expiries = await _stored(storage, items)
    assert states == {"expired"}
    assert sorted(expiries["expired"]) == sorted(items) and len(expiries) == 1  # each once
    assert bot.services.metrics.decisions["expired"] == 40  # each counted by who stored it
    assert _card(bot).count(CARD["deny"]) == 40
    assert len(_requester_notes(bot)) == 1
    assert (await bot.finished()).startswith("Finished: deleted 0")
