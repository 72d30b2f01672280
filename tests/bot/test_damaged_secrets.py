"""A damaged stored record is reported by its key and what is wrong with it, never by
what it holds: a callback URL may carry a secret in its query string, and a record or a
job's outcome may hold token-like text; none of it reaches a log line or an answer."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_receiver import Hooked

from bot.api.webhooks import WebhookSender
from storage.errors import CorruptRecordError
from storage.requests import request_record_id
from storage.webhooks import WebhookDelivery

SECRET = "sig-" + "q7Zk2mW9xR4tL8vN" * 2


def _leaked(text: str) -> list[str]:
    """Every 8-character piece of the secret that appears in ``text``."""
    pieces = {SECRET[at : at + 8] for at in range(len(SECRET) - 7)}
    return [piece for piece in pieces if piece in text]


async def _read_through_the_api(hooked: Hooked, made: dict[str, Any]) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.get(hooked.base + made["status_url"], headers=headers) as r:
        return r.status, await r.text()


async def test_damaged_request_meta_is_told_without_its_callback_url(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    made = await hooked.ask(callback_url=f"{hooked.hook}?token={SECRET}")
    storage = hooked.bot.services.storage
    key = storage.keys.request(made["id"])
    stored = await storage.client.raw.get(key)
    await storage.client.raw.set(key, stored[: stored.index(SECRET) + len(SECRET)])  # cut
    status, answer = await _read_through_the_api(hooked, made)
    assert status == 500
    told = [r.getMessage() for r in caplog.records if key in r.getMessage()]
    assert told and all("Invalid JSON" in m for m in told), told
    assert not _leaked(answer + caplog.text), caplog.text


async def test_a_damaged_interrupt_record_is_told_without_the_text_it_holds(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    made = await hooked.ask()
    storage = hooked.bot.services.storage
    key = storage.keys.record(request_record_id(made["id"]))
    await storage.client.raw.hset(key, "created_at", SECRET)
    status, answer = await _read_through_the_api(hooked, made)
    assert status == 500
    assert any(key in r.getMessage() for r in caplog.records), caplog.text
    assert not _leaked(answer + caplog.text), caplog.text


async def test_a_damaged_job_outcome_is_told_without_the_text_it_holds(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    made = await hooked.ask()
    storage = hooked.bot.services.storage
    key = storage.keys.run_job(made["id"])
    await storage.client.raw.hset(key, "outcome", f'1700000000000 {{"exit_status": "{SECRET}"}}')
    status, answer = await _read_through_the_api(hooked, made)
    assert status == 500
    assert any("exit_status" in r.getMessage() for r in caplog.records), caplog.text
    assert not _leaked(answer + caplog.text), caplog.text


async def test_a_damaged_webhook_delivery_is_told_without_its_url(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    await hooked.bot.loops.stop()  # this test's sender is the only one
    storage = hooked.bot.services.storage
    now = hooked.bot.clock.now()
    delivery = WebhookDelivery(
        id="1700000000000-0",
        url=f"{hooked.hook}?token={SECRET}",
        client="key-rotation",
        event="request.withdrawn",
        body="{}",
        created_at=now,
    )
    await storage.webhooks.add(delivery, due=now)
    key = storage.keys.webhook(delivery.id)
    stored = await storage.client.raw.get(key)
    await storage.client.raw.set(key, stored[: stored.index(SECRET) + len(SECRET)])  # cut
    with pytest.raises(CorruptRecordError) as damaged:
        await WebhookSender(hooked.bot.services).send_due()
    told = str(damaged.value)
    assert key in told and "Invalid JSON" in told, told
    assert not _leaked(told + caplog.text), told
    assert hooked.receiver.got == []
