"""Clicks that must change nothing get an ephemeral refusal (issue 4, test 5)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Policy
from bot.ui import ids


async def _stored(bot: Harness, value: str) -> dict[str, str]:
    """The record's raw Redis hash, to compare byte for byte."""
    storage = bot.services.storage
    key = storage.keys.record(bot.record_id(value))
    return dict(await storage.client.raw.hgetall(key))


async def _refused(bot: Harness, user: str, count: int = 1) -> str:
    await bot.slack.wait_calls("chat.postEphemeral", count)
    note = bot.slack.called("chat.postEphemeral")[count - 1]
    assert note["user"] == user
    return str(note["text"])


async def test_unauthorised_user_is_refused_and_nothing_changes(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(bot, value)
    await bot.click(ids.APPROVE, value, user=MALLORY)
    refused = await _refused(bot, MALLORY)
    assert "not among the approvers" in refused
    assert refused.endswith(f"Who may approve: <@{ALICE}>, <@{BOB}>, not the requester.")
    assert await _stored(bot, value) == before
    assert bot.slack.called("chat.update") == []


async def test_self_approval_is_refused_when_the_policy_says_so(make_bot: Any) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB)))
    value = await bot.start(requested_by=ALICE)
    before = await _stored(bot, value)
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "someone else" in await _refused(bot, ALICE)
    assert await _stored(bot, value) == before


async def test_second_click_changes_nothing(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    before = await _stored(bot, value)
    await bot.click(ids.APPROVE, value, user=BOB)
    text = await _refused(bot, BOB)
    assert text.startswith("Already approved by") and f"<@{ALICE}>" in text
    assert await _stored(bot, value) == before
    assert len(bot.tool_log.calls) == 1


async def test_click_after_expiry_is_refused_and_the_expiry_is_stored_as_it_says(
    make_bot: Any,
) -> None:
    """The sweep has not run yet: the click stores the expiry it would, so "has expired"
    is true when Alice reads it, and the card says so too."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), expires_after=timedelta(minutes=30))
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(minutes=31))
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert await _refused(bot, ALICE) == "This request has expired; nothing was approved."
    stored = await _stored(bot, value)
    assert (stored["state"], stored["decided_by"]) == ("expired", "")
    await bot.slack.wait_for(
        lambda: "Expired" in str(bot.slack.called("chat.update")), what="the card expired"
    )
    assert bot.tool_log.calls == []


async def test_interrupt_id_clicked_from_another_channel_is_refused(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(bot, value)
    await bot.click(ids.APPROVE, value, user=ALICE, channel="C0ELSEWHERE")
    assert "does not belong" in await _refused(bot, ALICE)
    await bot.click(ids.APPROVE, value, user=ALICE, message_ts="1700000099.000100")
    assert "does not belong" in await _refused(bot, ALICE, 2)
    assert await _stored(bot, value) == before


async def test_a_forged_digest_is_refused(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(bot, value)
    await bot.click(ids.APPROVE, bot.record_id(value) + " " + "0" * 32, user=ALICE)
    assert "arguments changed" in await _refused(bot, ALICE)
    assert await _stored(bot, value) == before


@pytest.mark.parametrize(
    ("how", "words"), [("edit", "approved with edits"), ("respond", "answered instead of run")]
)
async def test_a_click_after_an_edit_or_an_answer_names_it_as_its_card_does(
    make_bot: Any, how: str, words: str
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    await bot.decide(how, value, user=ALICE)
    await bot.click(ids.APPROVE, value, user=BOB)
    text = await _refused(bot, BOB)
    assert text == f"Already {words} by <@{ALICE}>; your click changed nothing."
