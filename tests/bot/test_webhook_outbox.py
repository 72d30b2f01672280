"""Webhook events wait in Redis's outbox: made while no sender runs, read past a damaged
request or a failing Redis, retried until their give-up time and then dropped."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from webhook_receiver import Hooked

from bot.api.webhooks import WebhookEvents, WebhookSender
from bot.process.loops import Loops
from storage.errors import StorageUnavailableError
from storage.webhooks import WebhookDelivery


async def test_events_made_while_no_sender_runs_are_delivered_once_one_starts(
    hooked: Hooked,
) -> None:
    await hooked.bot.loops.stop()  # every sender of this "process" is down
    hooked.receiver.status = 200
    made = await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    assert hooked.receiver.got == []

    later = Loops(hooked.bot.services, workers=0, deciders=0, scheduler=False)
    later.start()
    try:
        await hooked.got(1)
    finally:
        await later.stop()
    [event] = hooked.receiver.taken().values()
    assert event["event"] == "request.withdrawn" and event["request"]["id"] == made["id"]


async def test_a_request_whose_stored_meta_is_damaged_holds_up_no_other_requests_event(
    hooked: Hooked,
) -> None:
    """Read in one batch with a damaged request's event, another request's event is still
    delivered: the damaged one is logged and left, not retried forever with its batch."""
    await hooked.bot.loops.stop()  # both events are read in one batch, later
    hooked.receiver.status = 200
    damaged, fine = await hooked.ask(), await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    for made in (damaged, fine):
        async with hooked.http.post(
            f"{hooked.base}{made['status_url']}/withdraw", headers=headers
        ) as r:
            assert r.status == 200
    storage = hooked.bot.services.storage
    await storage.client.raw.set(storage.keys.request(damaged["id"]), "{broken")

    later = Loops(hooked.bot.services, workers=0, deciders=0, scheduler=False)
    later.start()
    try:
        await hooked.got(1)
    finally:
        await later.stop()
    [event] = hooked.receiver.taken().values()
    assert event["request"]["id"] == fine["id"]
    # Counted as dropped (never sent) before the other one was sent.
    assert hooked.bot.services.metrics.webhooks["dropped"] == 1


async def test_redis_failing_as_a_stored_event_is_sent_leaves_the_event_reader_running(
    hooked: Hooked, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The send right after storing fails (a Redis blip): the sender's own loop sends it
    later, and the reader goes on storing the events that follow."""

    class Unreachable:
        async def send_due(self) -> int:
            raise StorageUnavailableError("cannot reach Redis after retrying")

    for events in hooked.bot.loops.webhook_events:
        monkeypatch.setattr(events, "_sender", Unreachable())
    hooked.receiver.status = 200
    headers = {"Authorization": f"Bearer {hooked.token}"}
    for count in (1, 2):
        made = await hooked.ask()
        async with hooked.http.post(
            f"{hooked.base}{made['status_url']}/withdraw", headers=headers
        ) as r:
            assert r.status == 200
        await hooked.got(count)
    assert hooked.bot.services.stopped_loops == set()


async def test_a_delivery_refused_for_a_day_is_dropped(hooked: Hooked) -> None:
    made = await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    await hooked.got(1)
    await hooked.settled("retried")
    hooked.bot.clock.advance(timedelta(hours=24))
    await hooked.got(2)
    await hooked.settled("retried", "done")
    assert hooked.bot.services.metrics.webhooks == {"retried": 1, "dropped": 1}
    assert await hooked.bot.services.storage.webhooks.waiting() == 0


async def test_the_last_retry_of_a_refused_delivery_comes_at_its_give_up_time(
    hooked: Hooked,
) -> None:
    """Refused 23.5 hours in, its next try is not an hour later, when its stored delivery
    (kept a day and a minute) has expired unlogged, but at the 24 hour mark: given up,
    logged and counted."""
    client = await hooked.bot.services.storage.api_clients.get("key-rotation")
    assert client is not None
    now = hooked.bot.clock.now()
    delivery = WebhookDelivery(
        id="1700000000000-0",
        url=hooked.hook,
        client=client.name,
        client_since=client.created_at,
        event="request.withdrawn",
        body="{}",
        created_at=now - timedelta(hours=23, minutes=30),
        attempts=20,  # an hour apart by now
    )
    await hooked.bot.services.storage.webhooks.add(delivery, due=now)
    await hooked.got(1)
    await hooked.settled("retried")
    hooked.bot.clock.advance(timedelta(minutes=30))
    await hooked.got(2)
    await hooked.settled("retried", "done")
    assert hooked.bot.services.metrics.webhooks == {"retried": 1, "dropped": 1}


async def test_a_delivery_whose_client_record_is_damaged_is_dropped_not_retried_as_an_outage(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    """Its record was cut short in its webhook secret, which can no longer be read, so the
    delivery can never be signed: it is logged as damaged (none of the secret with it) and
    dropped, not retried each minute for a day as though Redis were down."""
    await hooked.bot.loops.stop()  # this test's sender is the only one
    storage = hooked.bot.services.storage
    now = hooked.bot.clock.now()
    delivery = WebhookDelivery(
        id="1700000000000-0",
        url=hooked.hook,
        client="key-rotation",
        event="request.withdrawn",
        body="{}",
        created_at=now,
    )
    await storage.webhooks.add(delivery, due=now)
    stored = await storage.client.raw.hget(storage.keys.api_clients, "key-rotation")
    cut = stored[: stored.index(hooked.secret) + 24]
    await storage.client.raw.hset(storage.keys.api_clients, "key-rotation", cut)
    assert await WebhookSender(hooked.bot.services).send_due() == 0
    await hooked.settled("done")
    assert hooked.bot.services.metrics.webhooks == {"dropped": 1}
    assert hooked.receiver.got == []
    told = [r.getMessage() for r in caplog.records if r.name == "bot.api.webhooks"]
    assert any("its client's stored record is damaged" in m for m in told), told
    pieces = {hooked.secret[at : at + 8] for at in range(len(hooked.secret) - 7)}
    assert not [piece for piece in pieces if piece in caplog.text], caplog.text


async def test_a_damaged_requests_event_read_again_after_its_ack_failed_is_counted_once(
    hooked: Hooked, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its event is dropped, Redis fails as the batch is acknowledged, and the batch is
    handled again: ``dropped`` counts the one event once."""
    await hooked.bot.loops.stop()
    made = await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    services = hooked.bot.services
    storage = services.storage
    await storage.client.raw.set(storage.keys.request(made["id"]), "{broken")
    events = WebhookEvents(services, consumer="again", sender=WebhookSender(services))
    batch = await events.read(count=10, block=timedelta(milliseconds=10))
    assert batch
    ack = storage.webhooks.ack_events

    async def fails(*_: Any) -> None:
        raise StorageUnavailableError("acknowledge webhook events: Redis is down")

    monkeypatch.setattr(storage.webhooks, "ack_events", fails)
    await events.handle(batch)
    monkeypatch.setattr(storage.webhooks, "ack_events", ack)
    await events.handle(batch)  # taken over again, as after the take-over time
    assert services.metrics.webhooks == {"dropped": 1}
    assert hooked.receiver.got == []


async def test_a_receiver_answering_410_gone_is_not_tried_again(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    """410 says the endpoint is gone for good: dropped at once, told once, counted."""
    hooked.receiver.status = 410
    made = await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    await hooked.got(1)
    await hooked.settled("done")
    assert hooked.bot.services.metrics.webhooks == {"dropped": 1}
    assert await hooked.bot.services.storage.webhooks.waiting() == 0
    told = [r.getMessage() for r in caplog.records if "410 Gone" in r.getMessage()]
    assert len(told) == 1 and "not tried again" in told[0], told
    hooked.bot.clock.advance(timedelta(hours=1))
    assert await hooked.bot.services.storage.webhooks.claim_due(hooked.bot.clock.now()) == []
    assert len(hooked.receiver.got) == 1
