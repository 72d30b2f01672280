"""A card Slack took while Redis was down, whose process died before Redis came back: the
outbox finds it in Slack by the record id in its metadata and records it, rather than
posting a second card and leaving the first one's buttons live and refused."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from fakes import Fault
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.refusals import reason_text
from storage import EmbeddedRedis, Storage
from storage.errors import StorageError
from storage.sweeps import POST_LEASE


@pytest.fixture
def storage(own_storage: Storage) -> Storage:
    """The bot's storage is on this module's own Redis, which its tests stop and start again."""
    return own_storage


async def _posted_then_died(make_bot: Any, server: EmbeddedRedis) -> tuple[Harness, dict[str, Any]]:
    """A process posts a card, Redis stops before the card is recorded, and the process
    dies; Redis comes back and another process runs the outbox once the post's lease
    lapsed. That process, and the card Slack took."""
    dying: Harness = await make_bot()
    dying.slack.after["chat.postMessage"] = server.stop
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    with pytest.raises(StorageError):
        await start_run(dying.services, "cleanup", "clean up", place=place)
    [card] = dying.slack.answers("chat.postMessage")
    await dying.loops.stop()  # it dies: the card it remembered is forgotten with it
    server.start()
    other: Harness = await make_bot()
    other.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(other.services).tick()
    return other, card


async def test_a_card_whose_process_died_while_redis_was_down_is_found_not_posted_again(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    bot, card = await _posted_then_died(make_bot, server)
    assert [c["ts"] for c in bot.slack.answers("chat.postMessage")] == [card["ts"]]
    [looked] = bot.slack.called("conversations.history")
    assert looked["channel"] == CHANNEL
    [record] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert (record.channel, record.message_ts) == (card["channel"], card["ts"])
    value = bot.posted()["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE, message_ts=card["ts"])
    assert "deleted 2 file(s)" in await bot.finished()


async def test_without_the_history_scope_the_card_is_posted_again_and_the_log_says_why(
    make_bot: Any, server: EmbeddedRedis, storage: Storage, slack: Any, caplog: Any
) -> None:
    """An app installed before cards were looked for cannot read the channel: the card is
    posted again, as before, and the log names the scopes that would have found it."""
    refused = {"ok": False, "error": "missing_scope"}
    slack.faults["conversations.history"].append(Fault(status=200, body=refused))
    with caplog.at_level(logging.WARNING, logger="bot.ui.found_cards"):
        bot, card = await _posted_then_died(make_bot, server)
    [_, again] = bot.slack.answers("chat.postMessage")
    [record] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert record.message_ts == again["ts"] != card["ts"]
    assert "channels:history" in caplog.text
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE, message_ts=card["ts"])
    await bot.slack.wait_calls("chat.postEphemeral")
    [told] = bot.slack.called("chat.postEphemeral")
    assert told["user"] == ALICE and told["text"] == reason_text("wrong_message")
    [still] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert still.state == "pending"


async def test_a_card_is_not_posted_while_slack_does_not_answer_whether_it_has_it(
    make_bot: Any, server: EmbeddedRedis, storage: Storage, slack: Any
) -> None:
    """Slack fails the look-up (an error on its side): the card stays in the outbox, found
    on a later try rather than posted a second time."""
    slack.faults["conversations.history"].append(Fault(status=503))
    bot, card = await _posted_then_died(make_bot, server)
    assert len(bot.slack.answers("chat.postMessage")) == 1
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    assert len(bot.slack.answers("chat.postMessage")) == 1
    [record] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert record.message_ts == card["ts"]


async def test_an_escalation_card_whose_process_died_while_redis_was_down_is_found(
    make_bot: Any, server: EmbeddedRedis, storage: Storage, slack: Any
) -> None:
    nyc, step = "C0NYC", timedelta(hours=2)
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=step,
        on_expiry=Escalate(channel=nyc, users=(BOB,), expires_after=step),
        reminders=None,
    )
    dying: Harness = await make_bot(policy)
    await dying.start()
    dying.clock.advance(step + timedelta(minutes=1))
    slack.after["chat.postMessage"] = server.stop  # just after the escalation card
    with pytest.raises(StorageError):
        await Scheduler(dying.services).tick()
    [escalated] = [p for p in slack.answers("chat.postMessage") if p["channel"] == nyc]
    await dying.loops.stop()
    server.start()

    other: Harness = await make_bot(policy)
    other.clock.advance(step + timedelta(minutes=1) + POST_LEASE + timedelta(seconds=1))
    await Scheduler(other.services).tick()
    cards = [p["channel"] for p in slack.called("chat.postMessage") if p.get("blocks")]
    assert cards == [CHANNEL, nyc]
    [record] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert (record.escalation_channel, record.escalation_ts) == (nyc, escalated["ts"])
