"""Cards, forms and App Home Slack failed to draw: a card Slack did not redraw is redrawn
later (one it refuses is not tried again), a form it did not open is told to the clicker,
and one Home it will not redraw does not stop the others."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fakes import BAD_GATEWAY, Fault
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.schedule.scheduler import Scheduler
from bot.ui import ids, redraws
from bot.ui.redraws import update_message
from bot.ui.refusals import FORM_NOT_OPENED
from storage.errors import StorageTimeoutError


async def test_one_home_slack_will_not_redraw_does_not_stop_the_others(make_bot: Any) -> None:
    """Alice and Bob have Home open; Slack refuses to redraw Alice's after her approval.
    Bob's is redrawn all the same."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    for user in (ALICE, BOB):
        before = len(bot.slack.called("views.publish"))
        await bot.event({"type": "app_home_opened", "user": user, "tab": "home"})
        await bot.slack.wait_for(
            lambda before=before: len(bot.slack.called("views.publish")) > before
        )
    published = len(bot.slack.called("views.publish"))
    refused = Fault(status=200, body={"ok": False, "error": "user_not_found"})
    bot.slack.faults["views.publish"].append(refused)  # the first redraw: Alice's
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    # The Homes are redrawn in the background, once the click decider has drawn the card.
    await bot.slack.wait_for(
        lambda: BOB in {c["user_id"] for c in bot.slack.called("views.publish")[published:]},
        what="Bob's Home redrawn",
    )


@pytest.mark.parametrize(
    "fault",
    [
        Fault(status=200, body={"ok": False, "error": "expired_trigger_id"}),
        Fault(status=502, body={"ok": False, "error": "bad_gateway"}),
    ],
    ids=["expired-trigger", "bad-gateway"],
)
async def test_a_form_slack_did_not_open_is_told_to_the_clicker(
    make_bot: Any, fault: Fault
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    bot.slack.faults["views.open"].append(fault)
    await bot.click(ids.DENY, value, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["user"] == ALICE and told["text"] == FORM_NOT_OPENED
    [record] = (await bot.services.storage.queries.pending_for_channel(CHANNEL, limit=5)).records
    assert record.state == "pending" and record.votes == ()


def _faults(bot: Harness, method: str, fault: Fault, times: int = 10) -> None:
    bot.slack.faults[method].extend([fault] * times)


async def test_a_card_slack_did_not_redraw_is_redrawn_by_the_scheduler(make_bot: Any) -> None:
    """Every chat.update fails (502) from Alice's approval to the run's end: the card
    still shows its buttons. Once Slack answers, the scheduler draws it decided."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    _faults(bot, "chat.update", Fault(status=502, body={"ok": False, "error": "bad_gateway"}))
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    await bot.clicks_done()  # the click decider's redraw failed, and is queued
    assert bot.slack.called("chat.update") == [] and bot.slack.failed
    assert await _queued_redraws(bot) == 1
    bot.slack.faults["chat.update"].clear()

    bot.clock.advance(timedelta(seconds=31))
    await Scheduler(bot.services).tick()
    [update] = bot.slack.called("chat.update")
    assert update["ts"] == bot.message_ts() and ids.APPROVE not in str(update["blocks"])
    bot.clock.advance(timedelta(minutes=5))
    await Scheduler(bot.services).tick()
    assert len(bot.slack.called("chat.update")) == 1  # drawn once, then off the queue


async def test_a_card_slack_refuses_to_redraw_is_not_tried_again(make_bot: Any) -> None:
    """The card was deleted in Slack (message_not_found): no redraw is queued."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    refused = Fault(status=200, body={"ok": False, "error": "message_not_found"})
    _faults(bot, "chat.update", refused)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    await bot.clicks_done()  # the click decider's redraw was refused
    tried = len(bot.slack.failed)
    assert tried and await _queued_redraws(bot) == 0
    bot.slack.faults["chat.update"].clear()

    bot.clock.advance(timedelta(seconds=31))
    await Scheduler(bot.services).tick()
    assert bot.slack.called("chat.update") == [] and len(bot.slack.failed) == tried


async def _queued_redraws(bot: Harness) -> int:
    storage = bot.services.storage
    keys = storage.keys
    return sum([await storage.client.raw.zcard(keys.redraws(s)) for s in keys.all_shards])


async def test_a_deleted_copy_does_not_hide_a_passing_failure_of_another(make_bot: Any) -> None:
    """The card's update gets a 502 and its escalation copy was deleted: the card's
    redraw is queued all the same."""
    bot: Harness = await make_bot()
    await bot.start(requested_by=CAROL)
    [record] = (await bot.services.storage.queries.pending_for_channel(CHANNEL, limit=5)).records
    record = record.model_copy(
        update={"escalation_channel": "C0NYC", "escalation_ts": "1700000099.000100"}
    )
    refused = Fault(status=200, body={"ok": False, "error": "message_not_found"})
    bot.slack.faults["chat.update"].extend([BAD_GATEWAY, refused])
    assert not await update_message(bot.services, record)
    assert await _queued_redraws(bot) == 1


async def test_a_queued_redraw_redis_failed_to_draw_stays_queued(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    await bot.services.storage.interrupts.redraw_later(bot.record_id(value), at=bot.clock.now())

    async def unread(services: Any, record: Any) -> Any:
        raise StorageTimeoutError("the batch's items were not read in time")

    monkeypatch.setattr(redraws, "card_forms", unread)
    await Scheduler(bot.services).tick()
    assert bot.slack.called("chat.update") == [] and await _queued_redraws(bot) == 1
