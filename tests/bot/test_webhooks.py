"""Webhooks over real HTTP and real Redis: a receiver that is down for a while gets each
event once it is back, under one delivery id, signed so that a forgery fails."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.test_utils import TestServer
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from agent_runtime import Decision
from bot.api.request_records import REQUESTS_PATH
from bot.api.webhooks import PublicResolver, WebhookEvents, WebhookSender
from bot.process.loops import Loops
from bot.process.web import operator_app
from bot.schedule.scheduler import Scheduler
from bot.services.callbacks import CallbackPolicy, forbidden_address
from bot.ui import ids
from signoff.webhooks import verify
from storage.errors import StorageUnavailableError
from storage.requests import request_record_id
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
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
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
    for forged in (
        {**sent, "X-Signoff-Signature": "v1=" + "0" * 64},
        {**sent, "X-Signoff-Signature": "v1=\u00e9"},  # not ASCII
        {**sent, "X-Signoff-Timestamp": "\u00b2"},  # a digit to str.isdigit, not to int()
    ):
        assert not verify(body, forged, hooked.secret, now=now)


def test_a_timestamp_too_long_to_be_one_fails_verify_rather_than_raising() -> None:
    """A forger's 400- or 5000-digit timestamp is refused like any stale one: the
    receiver answers 401, not a 500 with a traceback."""
    for stamp in ("9" * 400, "9" * 5000):
        forged = {"X-Signoff-Timestamp": stamp, "X-Signoff-Signature": "v1=" + "0" * 64}
        assert not verify(b"{}", forged, "secret", now=1_800_000_000)


async def test_a_request_approved_by_default_is_delivered_as_approved(hooked: Hooked) -> None:
    hooked.receiver.status = 200
    await hooked.ask(expires_in=60, if_nobody_decides="approve")
    hooked.bot.clock.advance(timedelta(seconds=61))
    await Scheduler(hooked.bot.services).tick()
    await hooked.got(1)
    [sent] = hooked.receiver.taken().values()
    assert sent["event"] == "request.approved" and sent["request"]["status"] == "approved"


@pytest.mark.parametrize(
    ("fields", "event", "status"),
    [
        ({}, "request.denied", "denied"),
        ({"expires_in": 60}, "request.expired", "expired"),
        (
            {"expires_in": 60, "on_expiry": "escalate", "escalate_to": [CAROL]},
            "request.escalated",
            "pending",
        ),
    ],
)
async def test_a_denial_an_expiry_and_an_escalation_are_each_delivered(
    hooked: Hooked, fields: dict[str, Any], event: str, status: str
) -> None:
    hooked.receiver.status = 200
    made = await hooked.ask(**fields)
    if fields:
        hooked.bot.clock.advance(timedelta(seconds=61))
        await Scheduler(hooked.bot.services).tick()
    else:
        value = hooked.bot.posted()["blocks"][-1]["elements"][0]["value"]
        await hooked.bot.decide("reject", value, user=ALICE)
    await hooked.got(1)
    [sent] = hooked.receiver.taken().values()
    assert sent["event"] == event and sent["request"]["id"] == made["id"]
    assert sent["request"]["status"] == status


async def test_a_request_with_items_is_delivered_once_with_its_outcome(hooked: Hooked) -> None:
    hooked.receiver.status = 200
    made = await hooked.ask(items=[f"vol-{n}" for n in range(4)])
    await hooked.bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({2}))
    await hooked.got(1)
    await hooked.settled("done")
    [(delivery, sent)] = hooked.receiver.taken().items()
    assert sent["event"] == "request.approved" and sent["request"]["status"] == "approved"
    assert delivery == sent["delivery_id"] == f"{made['id']}.approved"


async def test_a_request_whose_items_events_are_read_in_two_batches_is_delivered_once(
    hooked: Hooked,
) -> None:
    """A backlog splits a request's item events between reads: the second read finds the
    request decided again, and its delivery finished already."""
    await hooked.bot.loops.stop()  # the events wait in the stream, as in a backlog
    hooked.receiver.status = 200
    made = await hooked.ask(items=["vol-1", "vol-2"])
    storage = hooked.bot.services.storage
    lead = await storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    for item in await storage.queries.batch(lead):
        decided = await storage.interrupts.decide(
            item.id,
            ALICE,
            Decision.approve(),
            args_digest=item.args_digest,
            now=hooked.bot.clock.now(),
        )
        assert decided.status == "recorded"
    services = hooked.bot.services
    events = WebhookEvents(services, consumer="one-by-one", sender=WebhookSender(services))
    while batch := await events.read(count=1, block=timedelta(milliseconds=10)):
        await events.handle(batch)
    assert [json.loads(body)["delivery_id"] for _, _, body in hooked.receiver.got] == [
        f"{made['id']}.approved"
    ]


async def test_a_withdrawal_during_the_undo_window_leaves_no_hold(hooked: Hooked) -> None:
    hooked.receiver.status = 200
    made = await hooked.ask(undo_window=60)
    value = hooked.bot.posted(-1)["blocks"][-1]["elements"][0]["value"]
    await hooked.bot.click(ids.APPROVE, value, user=ALICE)
    headers = {"Authorization": f"Bearer {hooked.token}"}
    url = f"{hooked.base}{made['status_url']}/withdraw"
    async with hooked.http.post(url, headers=headers) as r:
        withdrawn = await r.json()
    assert withdrawn["status"] == "withdrawn", withdrawn
    assert (withdrawn["held_by"], withdrawn["held_until"]) == (None, None), withdrawn
    await hooked.got(1)
    [sent] = hooked.receiver.taken().values()
    assert sent["event"] == "request.withdrawn" and sent["request"]["held_by"] is None


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


async def test_a_name_that_resolves_to_a_metadata_address_is_never_connected_to() -> None:
    class Rebound(AbstractResolver):
        """A DNS name re-pointed at the metadata service."""

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            found = ("169.254.169.254", "::ffff:169.254.1.1")
            return [_result(host, address, port) for address in found]

        async def close(self) -> None:
            pass

    resolver = PublicResolver(CallbackPolicy(), Rebound())
    with pytest.raises(OSError, match="addresses webhooks may not reach"):
        await resolver.resolve("hooks.example.com", 443)
    assert forbidden_address("fd00:ec2::254") and not forbidden_address("203.0.113.7")


def _result(host: str, address: str, port: int) -> ResolveResult:
    return {
        "hostname": host,
        "host": address,
        "port": port,
        "family": socket.AF_INET,
        "proto": 0,
        "flags": 0,
    }


async def test_a_clients_own_callback_url_serves_its_requests_that_name_none(
    hooked: Hooked,
) -> None:
    hooked.receiver.status = 200
    client, token = await hooked.bot.services.storage.api_clients.create(
        "deploys", callback_url=hooked.hook, now=datetime.now(UTC)
    )
    body = {"title": "Deploy", "channel": CHANNEL, "approvers": [ALICE]}
    headers = {"Authorization": f"Bearer {token}"}
    async with hooked.http.post(hooked.base + REQUESTS_PATH, json=body, headers=headers) as r:
        made = await r.json()
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    await hooked.got(1)
    _, sent, delivered = hooked.receiver.got[0]
    assert json.loads(delivered)["request"]["id"] == made["id"]
    assert verify(delivered, sent, client.webhook_secret, now=hooked.bot.clock.now().timestamp())


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.5/hook",
        "https://[::1]:6443/api",
        "https://localhost:9200/_shutdown",
        "https://100.100.100.200/latest/meta-data",
        "https://metadata.google.internal./computeMetadata",
        # IP addresses spelled so that only the client's IDNA step makes them one.
        "https://\uff11\uff10.\uff10.\uff10.\uff15:6443/api",
        "https://169\u3002254\u3002169\u3002254/latest/meta-data/",
        # IPv6 forms of inside addresses: site-local, 6to4 and NAT64 of the metadata one.
        "https://[fec0::1]/",
        "https://[2002:a9fe:a9fe::1]/",
        "https://[64:ff9b::a9fe:a9fe]/",
    ],
)
def test_a_webhook_never_goes_inside_the_network_unless_its_host_is_allowed(url: str) -> None:
    assert CallbackPolicy().refusal(url) is not None
    assert CallbackPolicy().refusal("https://hooks.example.com/signoff") is None
    allowed = CallbackPolicy(allow=frozenset({"10.0.0.5"}))
    assert allowed.refusal("https://10.0.0.5/hook") is None


async def test_a_stored_delivery_to_an_address_now_refused_is_dropped_unsent(
    hooked: Hooked,
) -> None:
    """A delivery stored under an older check names the metadata address with ideographic
    full stops: the client would connect to it without asking the resolver, so the sender
    checks the URL again before sending."""
    now = hooked.bot.clock.now()
    delivery = WebhookDelivery(
        id="d-1",
        url="https://169\u3002254\u3002169\u3002254/latest/meta-data/",
        client="key-rotation",
        event="request.approved",
        body="{}",
        created_at=now,
    )
    await hooked.bot.services.storage.webhooks.add(delivery, due=now)
    assert await WebhookSender(hooked.bot.services).send_due() == 0
    await hooked.settled("done")
    assert hooked.bot.services.metrics.webhooks == {"dropped": 1}


async def test_a_name_that_resolves_inside_the_network_is_connected_to_only_if_allowed() -> None:
    class Internal(AbstractResolver):
        """A public-looking name that points at a private address."""

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            return [_result(host, "10.0.0.5", port)]

        async def close(self) -> None:
            pass

    with pytest.raises(OSError, match="addresses webhooks may not reach"):
        await PublicResolver(CallbackPolicy(), Internal()).resolve("hooks.example.com", 443)
    allowed = CallbackPolicy(allow=frozenset({"hooks.example.com"}))
    [found] = await PublicResolver(allowed, Internal()).resolve("hooks.example.com", 443)
    assert found["host"] == "10.0.0.5"


@pytest.mark.parametrize(
    "url",
    ["https://ops:Hunter2xyz/tail@hooks.example.com/a", "https://:Hunter2xyz?t@hooks.example.com"],
)
def test_a_callback_url_refused_as_malformed_does_not_quote_its_password(url: str) -> None:
    """The refusal is printed by ``signoff token create`` and answered to the API client:
    a password holding an unencoded / reads as a port, and must not be quoted as one."""
    refused = CallbackPolicy().refusal(url)
    assert refused is not None and "Hunter2" not in refused and "percent-encode" in refused
