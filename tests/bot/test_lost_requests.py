"""A job's pending request whose record Redis lost (evicted, or deleted by hand): it is
answered ``lost`` to whoever asks or waits, delivered once to its webhook, and its card
(a batch card whole, whichever item was lost) says it can no longer be decided."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from harness import ALICE, CHANNEL, Harness
from requests_jobs import Jobs
from webhook_receiver import Hooked

import signoff
from agent_runtime import Decision
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from signoff import gate, gate_wait
from signoff.gate_cli import LOST
from storage.records import InterruptRecord
from storage.requests import request_record_id


async def _lose(bot: Harness, record_id: str) -> None:
    """Delete the record's key, as an eviction does."""
    storage = bot.services.storage
    assert await storage.client.raw.delete(storage.keys.record(record_id)) == 1


async def _sweep(bot: Harness) -> None:
    """Two schedulers meet the lost request at once, its time up."""
    bot.clock.advance(timedelta(days=2))
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())


async def _approve(bot: Harness, record: InterruptRecord) -> None:
    """Alice approves ``record`` in storage, as her click would."""
    decided = await bot.services.storage.interrupts.decide(
        record.id, ALICE, Decision.approve(), args_digest=record.args_digest, now=bot.clock.now()
    )
    assert decided.status == "recorded"


async def _lost_entries(bot: Harness) -> list[Any]:
    return [e for e in await bot.services.storage.audit.read(count=100) if e.event == "lost"]


async def test_a_lost_request_is_delivered_to_its_webhook_once(hooked: Hooked) -> None:
    hooked.receiver.status = 200
    made = await hooked.ask(params=[{"name": "region", "value": "eu"}])
    await _lose(hooked.bot, request_record_id(made["id"]))
    await _sweep(hooked.bot)

    await hooked.got(1)
    await hooked.settled("done")
    [(delivery, sent)] = hooked.receiver.taken().items()
    assert sent["event"] == "request.lost" and sent["delivery_id"] == delivery
    request = sent["request"]
    assert request["id"] == made["id"] and request["status"] == "lost", request
    assert request["title"] == "Rotate keys" and request["params"] == {"region": "eu"}
    assert request["created_at"] == made["created_at"] and request["channel"] == CHANNEL
    assert "can no longer be decided" in request["reason"], request

    hooked.bot.clock.advance(timedelta(hours=2))
    await _sweep(hooked.bot)
    assert len(await _lost_entries(hooked.bot)) == 1
    assert len(hooked.receiver.got) == 1, "delivered once"


async def test_a_request_asked_about_once_lost_is_answered_lost_and_ended_once(
    jobs: Jobs,
) -> None:
    """Asked before its time is up, the request is found lost by the call that asks: it
    ends then (audited once), not only once a sweep meets it."""
    status, made = await jobs.ask()
    assert status == 201
    raw = jobs.bot.services.storage.client.raw
    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))

    async def following() -> bool:  # the long poll reads the request events
        return any(c["cmd"] == "xread" and "b" in c["flags"] for c in await raw.client_list())

    deadline = time.monotonic() + 5
    while not await following():
        assert time.monotonic() < deadline, "the long poll never waited"
        await asyncio.sleep(0.01)
    await _lose(jobs.bot, request_record_id(made["id"]))
    answers = await asyncio.gather(*(jobs.get(made["status_url"]) for _ in range(3)))
    for status, view in answers:
        assert status == 200 and view["status"] == "lost", view
        assert view["id"] == made["id"] and "can no longer be decided" in view["reason"]
    status, woken = await asyncio.wait_for(waiting, 10)
    assert status == 200 and woken["status"] == "lost", woken
    assert len(await _lost_entries(jobs.bot)) == 1
    [card] = [u for u in jobs.bot.slack.called("chat.update") if u["ts"] == jobs.bot.message_ts()]
    assert "can no longer be decided" in str(card["blocks"]), card
    await _sweep(jobs.bot)
    assert len(await _lost_entries(jobs.bot)) == 1
    status, view = await jobs.get(made["status_url"])
    assert status == 200 and view["status"] == "lost"
    status, refused = await jobs.post(made["status_url"] + "/withdraw")
    assert status == 409 and refused["status"] == "lost", refused
    report = {"exit_status": 0, "duration_seconds": 1.0}
    status, refused = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 409 and refused["status"] == "lost", refused


async def test_a_decided_request_is_kept_a_week_then_answered_404_not_lost(jobs: Jobs) -> None:
    """A record gone once its retention ended was not lost: the request is unknown, as the
    README says, with no ``lost`` in the audit, on its card or to its job."""
    status, made = await jobs.ask()
    assert status == 201
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    _, approved = await jobs.get(made["status_url"] + "?wait=10")
    assert approved["status"] == "approved", approved
    storage = jobs.bot.services.storage
    kept_ms = await storage.client.raw.pttl(storage.keys.record(request_record_id(made["id"])))
    assert timedelta(days=6) < timedelta(milliseconds=kept_ms) <= timedelta(days=7)
    await _lose(jobs.bot, request_record_id(made["id"]))  # as its retention ending does
    status, unknown = await jobs.get(made["status_url"])
    assert status == 404 and unknown["field"] == "id", unknown
    await _sweep(jobs.bot)
    assert await _lost_entries(jobs.bot) == []
    assert "no longer be decided" not in str(jobs.bot.slack.called("chat.update"))


async def test_a_long_poll_is_answered_lost_when_the_sweep_meets_its_request(
    jobs: Jobs,
) -> None:
    status, made = await jobs.ask()
    assert status == 201
    async with signoff.Client(jobs.base, jobs.token) as client:
        waiting = asyncio.create_task(client.wait(made["id"]))
        await jobs.bot.services.storage.client.raw.delete(
            jobs.bot.services.storage.keys.record(request_record_id(made["id"]))
        )
        await _sweep(jobs.bot)
        view = await asyncio.wait_for(waiting, 10)
    assert view.status == "lost" and view.final and not view.approved


async def test_a_waiting_gate_whose_request_is_lost_exits_lost_with_one_line(
    jobs: Jobs,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(gate_wait, "_RENEW", 0.1)  # it asks again at once, as each minute
    request = signoff.NewRequest(title="Rotate", channel=CHANNEL, approvers=[ALICE])
    ran = tmp_path / "ran"
    gating = asyncio.create_task(
        gate._gate(signoff.Client(jobs.base, jobs.token), request, ["touch", str(ran)])
    )
    await jobs.bot.slack.wait_calls("chat.postMessage")
    await _lose(jobs.bot, jobs.bot.record_id(jobs.value()))
    assert await asyncio.wait_for(gating, 10) == LOST
    assert not ran.exists()
    said = capsys.readouterr().err.splitlines()
    assert said[-1].startswith("signoff gate: lost: ") and "no longer be decided" in said[-1]
    assert not any("Traceback" in line for line in said)


async def test_a_lost_requests_card_says_it_can_no_longer_be_decided(jobs: Jobs) -> None:
    status, made = await jobs.ask()
    assert status == 201
    await _lose(jobs.bot, request_record_id(made["id"]))
    await _sweep(jobs.bot)
    [card] = [u for u in jobs.bot.slack.called("chat.update") if u["ts"] == jobs.bot.message_ts()]
    assert card["channel"] == CHANNEL
    said = str(card["blocks"])
    assert "can no longer be decided" in said and "actions" not in said, said


@pytest.mark.parametrize("lost", [1, 0], ids=["an item", "its lead"])
async def test_a_lost_items_batch_card_is_drawn_whole_and_the_view_names_it(
    jobs: Jobs, lost: int
) -> None:
    items = ["vol-a", "vol-b", "vol-c"]
    status, made = await jobs.ask(items=items)
    assert status == 201
    lead = await jobs.bot.services.storage.queries.get(request_record_id(made["id"]))
    assert lead is not None and len(lead.batch_items) == 3
    await _lose(jobs.bot, lead.batch_items[lost])
    await _sweep(jobs.bot)

    assert len(await _lost_entries(jobs.bot)) == 1
    updates = [u for u in jobs.bot.slack.called("chat.update") if u["ts"] == jobs.bot.message_ts()]
    said = str(updates[-1]["blocks"])
    assert "Decided but for lost items" in updates[-1]["text"], updates[-1]["text"]
    assert f"{lost + 1}. :warning: Lost from Redis while it waited" in said, said
    for n, item in enumerate(items):
        assert (f"{n + 1}. {item}: Expired" in said) == (n != lost), said
    status, view = await jobs.get(made["status_url"])
    assert status == 200 and view["status"] == "lost", view
    assert [i["item"] for i in view["items"]] == items
    assert [i["status"] for i in view["items"]] == [
        "lost" if n == lost else "expired" for n in range(3)
    ], view["items"]


async def test_a_request_whose_item_was_approved_before_another_was_lost_stays_approved(
    jobs: Jobs,
) -> None:
    status, made = await jobs.ask(items=["vol-a", "vol-b", "vol-c"])
    assert status == 201
    storage = jobs.bot.services.storage
    lead = await storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    await _approve(jobs.bot, lead)
    await _lose(jobs.bot, lead.batch_items[1])

    status, view = await jobs.get(made["status_url"])
    assert status == 200 and view["status"] == "approved", view
    assert [i["status"] for i in view["items"]] == ["approved", "lost", "withdrawn"], view
    assert len(await _lost_entries(jobs.bot)) == 1


async def test_the_outcome_of_a_job_whose_lead_item_was_lost_after_another_was_approved_is_shown(
    jobs: Jobs,
) -> None:
    """The job ran on the approved item: its outcome goes to the card's thread, audited."""
    status, made = await jobs.ask(items=["vol-a", "vol-b", "vol-c"])
    assert status == 201
    storage = jobs.bot.services.storage
    lead = await storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    second = await storage.queries.get(lead.batch_items[1])
    assert second is not None
    await _approve(jobs.bot, second)
    await _lose(jobs.bot, lead.id)
    status, view = await jobs.get(made["status_url"])
    assert status == 200 and view["status"] == "approved", view

    report = {"exit_status": 0, "duration_seconds": 2.0, "summary": "deleted vol-b"}
    status, answered = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 200 and answered["status"] == "approved", answered
    assert [i["status"] for i in answered["items"]] == ["lost", "approved", "withdrawn"]
    [note] = [m for m in jobs.bot.slack.called("chat.postMessage") if "deleted vol-b" in m["text"]]
    assert note["channel"] == CHANNEL and note["thread_ts"] == jobs.bot.message_ts(), note
    assert "Delete 42 stale volumes: succeeded in 2.0 s" in note["text"], note
    [entry] = [e for e in await storage.audit.read(count=100) if e.event == "outcome"]
    assert entry.run_id == made["id"] and '"exit_status":0' in (entry.detail or ""), entry
    other = {**report, "summary": "deleted vol-c"}
    status, again = await jobs.post(made["status_url"] + "/outcome", other)
    assert status == 409 and "reported for this request already" in again["error"], again


@pytest.mark.parametrize(
    ("items", "asked"),
    [(["vol-a", "vol-b"], True), ([], False)],
    ids=["an item lost, asked about", "its only record lost, not yet found"],
)
async def test_a_retry_with_the_key_of_a_lost_request_asks_afresh_once(
    jobs: Jobs, items: list[str], asked: bool
) -> None:
    """The lost request can never be decided: the same key again makes a new request and
    card, which names the one it replaces; retries after that find the new one."""
    status, made = await jobs.ask(idempotency_key="nightly", items=items)
    assert status == 201
    lead = await jobs.bot.services.storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    await _lose(jobs.bot, lead.batch_items[1] if items else lead.id)
    if asked:
        status, view = await jobs.get(made["status_url"])
        assert view["status"] == "lost", view

    status, fresh = await jobs.ask(idempotency_key="nightly", items=items)
    assert status == 201 and fresh["id"] != made["id"], fresh
    assert fresh["status"] == "pending" and fresh["replaces_lost"] == made["id"], fresh
    assert len(jobs.bot.slack.called("chat.postMessage")) == 2
    status, again = await jobs.ask(idempotency_key="nightly", items=items)
    assert (status, again["id"], again["replaces_lost"]) == (200, fresh["id"], made["id"])
    assert len(jobs.bot.slack.called("chat.postMessage")) == 2
    status, view = await jobs.get(made["status_url"])
    assert status == 200 and view["status"] == "lost" and view["replaces_lost"] is None, view
    storage = jobs.bot.services.storage
    fresh_lead = await storage.queries.get(request_record_id(fresh["id"]))
    assert fresh_lead is not None
    for item in await storage.queries.batch(fresh_lead):  # it can be decided
        await _approve(jobs.bot, item)
    status, view = await jobs.get(fresh["status_url"])
    assert view["status"] == "approved", view
    assert len(await _lost_entries(jobs.bot)) == 1


async def test_a_retry_with_the_key_of_a_request_approved_before_an_item_was_lost_finds_it(
    jobs: Jobs,
) -> None:
    status, made = await jobs.ask(idempotency_key="nightly", items=["vol-a", "vol-b"])
    storage = jobs.bot.services.storage
    lead = await storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    await _approve(jobs.bot, lead)
    await _lose(jobs.bot, lead.batch_items[1])
    status, again = await jobs.ask(idempotency_key="nightly", items=["vol-a", "vol-b"])
    assert (status, again["id"], again["status"]) == (200, made["id"], "approved"), again
    assert len(jobs.bot.slack.called("chat.postMessage")) == 1


async def test_a_retry_with_the_key_of_a_lost_request_and_another_body_is_refused(
    jobs: Jobs,
) -> None:
    """The key of a lost request sent with another body is refused as for a request kept:
    nothing is made; the same body again makes the new request."""
    status, made = await jobs.ask(idempotency_key="nightly")
    assert status == 201
    await _lose(jobs.bot, request_record_id(made["id"]))

    status, refused = await jobs.ask(idempotency_key="nightly", title="Delete every volume")
    assert (status, refused["field"]) == (409, "idempotency_key"), refused
    assert "used for a request with another body" in refused["error"], refused
    assert len(jobs.bot.slack.called("chat.postMessage")) == 1
    status, fresh = await jobs.ask(idempotency_key="nightly")
    assert (status, fresh["replaces_lost"]) == (201, made["id"]), fresh
