"""A damaged stored record is reported by its key and what is wrong with it, never by
what it holds: a callback URL may carry a secret in its query string, and a record or a
job's outcome, a session, a trust grant or a batch item may hold token-like text; none
of it reaches a log line, an answer, a card or the audit trail."""

from __future__ import annotations

from typing import Any

import pytest
from batch_agents import spec as batch_spec
from harness import ALICE, CAROL, CHANNEL, Harness
from webhook_receiver import Hooked

from bot.api.webhooks import WebhookSender
from bot.ui import ids
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


async def test_a_damaged_session_is_told_without_what_it_holds(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    storage = hooked.bot.services.storage
    key = storage.keys.session("thread_damaged")
    for version, snapshot in (
        ("1", f'{{"messages": ["{SECRET}'),  # cut
        ("1", f'["{SECRET}"]'),  # not an object
        (SECRET, "{}"),  # not a version
    ):
        await storage.client.raw.hset(key, mapping={"version": version, "snapshot": snapshot})
        with pytest.raises(CorruptRecordError) as damaged:
            await storage.sessions.load("thread_damaged")
        told = str(damaged.value)
        assert key in told, told
        assert not _leaked(told + caplog.text), told


async def test_a_damaged_trust_grant_is_told_without_what_it_holds(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    storage = hooked.bot.services.storage
    for grant in (
        f'{{"id": "trust_1", "agent": "{SECRET}',  # cut
        f'{{"id": "trust_1", "agent": "a", "tool": "t", "channel": "{SECRET}"}}',
        f'{{"id": "trust_1", "expires_at": "{SECRET}", "extra": "{SECRET}"}}',
    ):
        await storage.client.raw.hset(storage.keys.trust_grants, "trust_1", grant)
        with pytest.raises(CorruptRecordError) as damaged:
            await storage.trust.active(hooked.bot.clock.now())
        told = str(damaged.value)
        assert storage.keys.trust_grants in told and "not a trust grant" in told, told
        assert not _leaked(told + caplog.text), told


async def test_damaged_batch_items_are_told_without_what_they_hold(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The lead's votes and another item's creation time hold secret-like text: the click
    decides the rest, and no answer, card, log line or audit entry quotes it."""
    bot: Harness = await make_bot(spec=batch_spec([]))
    await bot.start(requested_by=CAROL)
    storage = bot.services.storage
    page = await storage.queries.pending_for_channel(CHANNEL, limit=50)
    [lead] = [r for r in page.records if r.batch_items]
    other = next(r for r in page.records if r.id != lead.id)
    await storage.client.raw.hset(storage.keys.record(lead.id), "votes", f"not json {SECRET}")
    await storage.client.raw.hset(storage.keys.record(other.id), "created_at", SECRET)

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_for(
        lambda: bot.slack.called("chat.postEphemeral"), what="the note on damaged items"
    )
    entries = await storage.audit.read(count=500)
    assert {e.record_id for e in entries if e.event == "damaged"} >= {lead.id}
    told = str(bot.slack.calls) + caplog.text + str([vars(e) for e in entries])
    assert not _leaked(told), told
