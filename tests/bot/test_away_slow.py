"""``/signoff away`` with Slack slow to tell the user's time zone: the command is acked
within Slack's budget, and what came of it follows through its ``response_url``, never
saying something was noted that was not."""

from __future__ import annotations

import asyncio
import urllib.parse
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, Harness
from slack_requests import command_body, sign

from bot.slack import away
from bot.slack.events import EVENTS_PATH
from storage.errors import StorageUnavailableError


async def _command_held(bot: Harness, text: str) -> dict[str, Any]:
    """Send ``/signoff <text>`` answering to the fake's ``response_url`` while users.info
    is held; the ack, which comes while Slack still holds the answer."""
    bot.slack.held["users.info"] = asyncio.Event()
    fields = dict(urllib.parse.parse_qsl(command_body(text=text, user=ALICE, channel="C1")))
    body = urllib.parse.urlencode({**fields, "response_url": bot.slack.response_url})
    async with (
        asyncio.timeout(10),
        bot.http.post(bot.url + EVENTS_PATH, data=body.encode(), headers=sign(body)) as response,
    ):
        assert response.status == 200
        answer = await response.text()
    return {"text": answer}


async def _away_of(bot: Harness) -> Any:
    return await bot.services.storage.away.of([ALICE], bot.clock.now())


async def test_away_with_slack_slow_is_acked_in_time_and_answered_once_noted(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot()
    monkeypatch.setattr(away, "ACK_BUDGET", 0.05)  # the ack waits this long, not for Slack
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    ack = await _command_held(bot, f"away until {back_on}")
    assert ack["text"] == away.NOTING
    assert await _away_of(bot) == {}  # the ack told nothing was noted: nothing is
    assert bot.slack.called("response_url") == []
    bot.slack.held["users.info"].set()
    await bot.slack.wait_calls("response_url")
    [answer] = bot.slack.called("response_url")
    assert answer["text"].startswith("You are away until"), answer
    assert answer["response_type"] == "ephemeral"  # only the user sees it
    assert ALICE in await _away_of(bot)


async def test_away_slow_then_failing_to_store_says_nothing_was_recorded(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot()
    monkeypatch.setattr(away, "ACK_BUDGET", 0.05)

    async def down(_: Any) -> None:
        raise StorageUnavailableError("Redis is unreachable")

    monkeypatch.setattr(bot.services.storage.away, "set", down)
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    ack = await _command_held(bot, f"away until {back_on}")
    assert ack["text"] == away.NOTING
    bot.slack.held["users.info"].set()
    await bot.slack.wait_calls("response_url")
    [answer] = bot.slack.called("response_url")
    assert answer["text"].startswith("Signoff could not reach its storage"), answer
    assert await _away_of(bot) == {}
