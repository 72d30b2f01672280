"""Webhooks over real HTTP and real Redis: a receiver that is down for a while gets each
event once it is back, under one delivery id, signed so that a forgery fails."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from harness import ALICE, BOB, CHANNEL, Harness

from bot.api.callbacks import CallbackPolicy
from bot.api.request_records import REQUESTS_PATH
from bot.api.webhooks import WebhookSender
from bot.process.web import operator_app
from bot.ui import ids
from signoff.webhooks import verify
from storage.webhooks import WebhookDelivery


@dataclass
class Receiver:
    """A webhook receiver that answers ``status``; it keeps every request it got."""

    status: int = 503
    got: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def handle(self, request: web.Request) -> web.Response:
        self.got.append((self.status, dict(request.headers), await request.read()))
        async with self.changed:
            self.changed.notify_all()
        return web.Response(status=self.status)

    async def wait(self, count: int) -> None:
        async with self.changed, asyncio.timeout(10):
            await self.changed.wait_for(lambda: len(self.got) >= count)

    def taken(self) -> dict[str, dict[str, Any]]:
        """The deliveries it accepted, by delivery id (duplicates dropped, as it should)."""
        return {
            headers["X-Signoff-Delivery"]: json.loads(body)
            for status, headers, body in self.got
            if status == 200
        }


@dataclass
class Hooked:
    bot: Harness
    base: str
    http: aiohttp.ClientSession
    token: str
    secret: str
    receiver: Receiver
    hook: str
    rescheduled: asyncio.Condition
    outcomes: list[str]

    async def ask(self, **fields: Any) -> dict[str, Any]:
        body = {"title": "Rotate keys", "channel": CHANNEL, "approvers": [ALICE, BOB]}
        headers = {"Authorization": f"Bearer {self.token}"}
        body |= {"callback_url": self.hook, **fields}
        async with self.http.post(self.base + REQUESTS_PATH, json=body, headers=headers) as r:
            assert r.status == 201, await r.text()
            return dict(await r.json())

    async def got(self, count: int) -> None:
        await self.receiver.wait(count)

    async def settled(self, *outcomes: str) -> None:
        """Wait until the sender has handled its attempts so far with ``outcomes``."""
        async with self.rescheduled, asyncio.timeout(10):
            await self.rescheduled.wait_for(lambda: self.outcomes == list(outcomes))


@pytest.fixture
async def hooked(make_bot: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Hooked]:
    bot: Harness = await make_bot()
    outbox = bot.services.storage.webhooks
    rescheduled, retry, done = asyncio.Condition(), outbox.retry, outbox.done
    outcomes: list[str] = []

    async def tell(what: str) -> None:
        async with rescheduled:
            outcomes.append(what)
            rescheduled.notify_all()

    async def retry_and_tell(delivery: WebhookDelivery, *, at: datetime) -> None:
        await retry(delivery, at=at)
        await tell("retried")

    async def done_and_tell(delivery_id: str) -> None:
        await done(delivery_id)
        await tell("done")

    monkeypatch.setattr(outbox, "retry", retry_and_tell)
    monkeypatch.setattr(outbox, "done", done_and_tell)
    receiver = Receiver()
    hook_app = web.Application()
    hook_app.router.add_post("/hook", receiver.handle)
    hook_server = TestServer(hook_app, host="127.0.0.1", port=0)
    await hook_server.start_server()
    client, token = await bot.services.storage.api_clients.create(
        "key-rotation", now=datetime.now(UTC)
    )
    allow = CallbackPolicy(allow=frozenset({f"127.0.0.1:{hook_server.port}"}))
    api = TestServer(operator_app(bot.services, callbacks=allow), host="127.0.0.1", port=0)
    await api.start_server()

    async with aiohttp.ClientSession() as http:
        yield Hooked(
            bot=bot,
            base=f"http://127.0.0.1:{api.port}",
            http=http,
            token=token,
            secret=client.webhook_secret,
            receiver=receiver,
            hook=f"http://127.0.0.1:{hook_server.port}/hook",
            rescheduled=rescheduled,
            outcomes=outcomes,
        )
    await api.close()
    await hook_server.close()


async def test_a_receiver_down_for_a_while_gets_each_event_once_it_is_back(
    hooked: Hooked,
) -> None:
    made = await hooked.ask()
    value = hooked.bot.posted()["blocks"][-1]["elements"][0]["value"]
    await hooked.bot.click(ids.APPROVE, value, user=ALICE)
    await hooked.got(1)  # tried at once, refused: the receiver is down
    await hooked.settled("retried")
    hooked.bot.clock.advance(timedelta(seconds=5))
    await hooked.got(2)
    assert hooked.receiver.taken() == {}

    await hooked.settled("retried", "retried")
    hooked.receiver.status = 200
    hooked.bot.clock.advance(timedelta(seconds=10))
    await hooked.got(3)
    [(delivery_id, event)] = hooked.receiver.taken().items()
    assert event["event"] == "request.approved" and event["delivery_id"] == delivery_id
    assert event["request"]["id"] == made["id"] and event["request"]["decided_by"] == ALICE
    assert {h["X-Signoff-Delivery"] for _, h, _ in hooked.receiver.got} == {delivery_id}
    await hooked.settled("retried", "retried", "done")
    assert hooked.bot.services.metrics.webhooks == {"retried": 2, "delivered": 1}

    # Delivered: nothing is sent again, however long one waits.
    hooked.bot.clock.advance(timedelta(hours=2))
    assert await WebhookSender(hooked.bot.services).send_due() == 0
    assert len(hooked.receiver.got) == 3


async def test_a_withdrawal_is_delivered_signed_and_a_forgery_fails_verify(
    hooked: Hooked,
) -> None:
    hooked.receiver.status = 200
    made = await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    url = f"{hooked.base}{made['status_url']}/withdraw"
    async with hooked.http.post(url, headers=headers) as r:
        assert r.status == 200
    await hooked.got(1)
    _, sent, body = hooked.receiver.got[0]
    assert json.loads(body)["event"] == "request.withdrawn"

    now = hooked.bot.clock.now().timestamp()
    assert verify(body, sent, hooked.secret, now=now)
    assert not verify(body.replace(b"withdrawn", b"approved"), sent, hooked.secret, now=now)
    assert not verify(body, sent, "another client's secret", now=now)
    assert not verify(body, sent, hooked.secret, now=now + 301)  # a replay, later
    forged = {**sent, "X-Signoff-Signature": "v1=" + "0" * 64}
    assert not verify(body, forged, hooked.secret, now=now)
