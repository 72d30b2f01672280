"""A webhook that fails is logged by its delivery and client, never by its callback URL's
query string: aiohttp names the URL in some errors (a connect timeout)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import aiohttp
import pytest
from harness import ALICE
from webhook_receiver import Hooked

from agent_runtime.shown_urls import without_url_secrets
from bot.api import webhooks
from bot.api.webhooks import WebhookSender
from bot.ui import ids
from storage.webhooks import WebhookDelivery

SECRET = "tok-" + "Hq3vX8mZ2kP7wR5n" * 2


async def test_a_webhook_whose_connection_times_out_is_logged_without_its_query(
    hooked: Hooked,
    unanswered_port: int,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await hooked.bot.loops.stop()  # this test's sender is the only one
    monkeypatch.setattr(webhooks, "_SEND_TIMEOUT", aiohttp.ClientTimeout(total=10, connect=0.3))
    now = hooked.bot.clock.now()
    delivery = WebhookDelivery(
        id="1700000000000-0",
        url=f"http://127.0.0.1:{unanswered_port}/hook?token={SECRET}",
        client="key-rotation",
        event="request.withdrawn",
        body="{}",
        created_at=now,
    )
    await hooked.bot.services.storage.webhooks.add(delivery, due=now)
    sender = WebhookSender(hooked.bot.services)
    sending = asyncio.create_task(sender.run())
    await hooked.settled("retried")
    sender.stop()
    await sending
    [told] = [r.getMessage() for r in caplog.records if "not taken" in r.getMessage()]
    assert "ConnectionTimeoutError" in told, told
    assert f"http://127.0.0.1:{unanswered_port}/hook" in told, told
    assert SECRET not in caplog.text and "token=" not in caplog.text, caplog.text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("redis://:pw-secret@redis.internal:6379/0", "redis://redis.internal:6379/0"),
        ("to host https://h.example/hook?token=abc#x)", "to host https://h.example/hook"),
        ("rediss://u:p@[::1]:6380 refused", "rediss://[::1]:6380 refused"),
    ],
)
def test_a_url_in_a_message_is_shown_without_credentials_or_query(text: str, shown: str) -> None:
    assert without_url_secrets(text) == shown


async def test_a_request_whose_webhook_is_retried_then_taken_logs_none_of_its_secrets(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    """Every line the bot logs, at DEBUG: its callback URL's token, the client's API token
    and its webhook secret appear in none."""
    caplog.set_level(logging.DEBUG)
    await hooked.ask(callback_url=f"{hooked.hook}?token={SECRET}")
    value = hooked.bot.posted()["blocks"][-1]["elements"][0]["value"]
    await hooked.bot.click(ids.APPROVE, value, user=ALICE)
    await hooked.got(1)  # refused: the receiver is down
    await hooked.settled("retried")
    hooked.receiver.status = 200
    hooked.bot.clock.advance(timedelta(seconds=5))
    await hooked.got(2)
    await hooked.settled("retried", "done")
    assert any("delivered" in r.getMessage() for r in caplog.records), caplog.text
    # The receiver's own access log shows the query it was sent; the bot's is checked in
    # tests/processes (it drops query strings).
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name != "aiohttp.access")
    for secret in (SECRET, hooked.token, hooked.secret):
        assert secret not in logged, logged
