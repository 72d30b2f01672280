"""Webhooks over real HTTP and real Redis: a receiver that is down for a while gets each
event once it is back, under one delivery id, signed so that a forgery fails."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, CAROL
from webhook_receiver import Hooked

from agent_runtime import Decision
from bot.api.signatures import signed_headers
from bot.api.webhooks import WebhookEvents, WebhookSender
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from signoff.webhooks import verify
from storage.errors import StorageTimeoutError
from storage.requests import request_record_id


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
    assert verify(body.decode(), sent, hooked.secret, now=now)  # a framework's decoded text
    # As documented, for a receiver in any language: v1= hex HMAC-SHA256 of v1:{ts}:{body}.
    stamp = sent["X-Signoff-Timestamp"]
    assert abs(int(stamp) - now) < 5
    recipe = hmac.new(hooked.secret.encode(), f"v1:{stamp}:".encode() + body, hashlib.sha256)
    assert sent["X-Signoff-Signature"] == "v1=" + recipe.hexdigest()
    assert not verify(body.replace(b"withdrawn", b"approved"), sent, hooked.secret, now=now)
    assert not verify(body, sent, "another client's secret", now=now)
    assert not verify(body, sent, hooked.secret, now=now + 301)  # a replay, later
    for forged in (
        {**sent, "X-Signoff-Signature": "v1=" + "0" * 64},
        {**sent, "X-Signoff-Signature": "v1=\u00e9"},  # not ASCII
        {**sent, "X-Signoff-Timestamp": "\u00b2"},  # a digit to str.isdigit, not to int()
    ):
        assert not verify(body, forged, hooked.secret, now=now)


async def test_a_delivery_sent_again_under_another_id_fails_verify(hooked: Hooked) -> None:
    """Someone who captured a delivery (plain http to an allow-listed host) cannot get it
    past the receiver's duplicate check by changing its unsigned id header."""
    hooked.receiver.status = 200
    made = await hooked.ask()
    url = f"{hooked.base}{made['status_url']}/withdraw"
    async with hooked.http.post(url, headers={"Authorization": f"Bearer {hooked.token}"}) as r:
        assert r.status == 200
    await hooked.got(1)
    _, sent, body = hooked.receiver.got[0]
    now = hooked.bot.clock.now().timestamp()
    assert sent["X-Signoff-Delivery"] == json.loads(body)["delivery_id"]
    assert verify(body, sent, hooked.secret, now=now)
    unsigned = {k: v for k, v in sent.items() if k != "X-Signoff-Delivery"}
    for headers in ({**sent, "X-Signoff-Delivery": "1700000000000-1"}, unsigned):
        assert not verify(body, headers, hooked.secret, now=now)


def test_a_timestamp_too_long_to_be_one_fails_verify_rather_than_raising() -> None:
    """A forger's 400- or 5000-digit timestamp is refused like any stale one: the
    receiver answers 401, not a 500 with a traceback."""
    for stamp in ("9" * 400, "9" * 5000):
        forged = {"X-Signoff-Timestamp": stamp, "X-Signoff-Signature": "v1=" + "0" * 64}
        assert not verify(b"{}", forged, "secret", now=1_800_000_000)


@pytest.mark.parametrize("unset", ["", "\n", "  "])
def test_verify_without_a_secret_raises_rather_than_passing_a_forgery(unset: str) -> None:
    """A receiver whose secret setting is unset (``os.environ.get(..., "")``, an empty
    mounted file) is told so, rather than taking deliveries anyone can sign with no key;
    a secret read with its newline checks as the secret."""
    body, now = b'{"delivery_id":"1700000000000-0"}', 1_800_000_000
    forged = signed_headers(body, unset, timestamp=now, delivery_id="1700000000000-0")
    with pytest.raises(ValueError, match="no webhook secret"):
        verify(body, forged, unset, now=now)
    signed = signed_headers(body, "s3cret", timestamp=now, delivery_id="1700000000000-0")
    assert verify(body, signed, "s3cret\n", now=now)


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


@pytest.mark.parametrize(
    ("fields", "submitted", "event"),
    [
        (
            {"params": [{"name": "limit", "type": "integer", "value": 42, "editable": True}]},
            (ids.EDIT_VIEW, '{"limit": 10}'),
            "request.edited",
        ),
        ({"allow_reply": True}, (ids.REPLY_VIEW, "done by hand"), "request.responded"),
    ],
)
async def test_an_edit_and_a_reply_are_each_delivered_under_their_own_event(
    hooked: Hooked, fields: dict[str, Any], submitted: tuple[str, str], event: str
) -> None:
    hooked.receiver.status = 200
    made = await hooked.ask(**fields)
    value = hooked.bot.posted()["blocks"][-1]["elements"][0]["value"]
    view, text = submitted
    status, body = await hooked.bot.submit(view, value, user=ALICE, text=text)
    assert status == 200 and "errors" not in body, body
    await hooked.got(1)
    [sent] = hooked.receiver.taken().values()
    assert sent["event"] == event and sent["request"]["id"] == made["id"]


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


async def test_a_drop_redis_fails_to_store_is_neither_told_nor_counted_until_it_is(
    hooked: Hooked, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Its client was revoked, so the delivery is dropped; Redis fails as it leaves the
    outbox: it is tried again later, and told and counted as dropped once, when it is."""
    outbox = hooked.bot.services.storage.webhooks
    done, failed = outbox.done, asyncio.Event()

    async def fails_once(delivery_id: str) -> None:
        if not failed.is_set():
            failed.set()
            raise StorageTimeoutError("take a webhook off the outbox: Redis did not answer")
        await done(delivery_id)

    monkeypatch.setattr(outbox, "done", fails_once)
    caplog.set_level(logging.INFO, logger="bot.api.webhooks")
    await hooked.ask()
    assert await hooked.bot.services.storage.api_clients.revoke("key-rotation")
    value = hooked.bot.posted()["blocks"][-1]["elements"][0]["value"]
    await hooked.bot.click(ids.APPROVE, value, user=ALICE)
    await asyncio.wait_for(failed.wait(), 10)
    assert "dropped" not in hooked.bot.services.metrics.webhooks
    assert not [r for r in caplog.records if " dropped: " in r.getMessage()]

    hooked.bot.clock.advance(timedelta(minutes=2))  # its send lease lapses
    await WebhookSender(hooked.bot.services).send_due()
    assert hooked.bot.services.metrics.webhooks == {"dropped": 1}
    assert len([r for r in caplog.records if " dropped: " in r.getMessage()]) == 1
    assert hooked.receiver.got == []
