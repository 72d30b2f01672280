"""A job's request with items: one card, and the job learns each item's fate."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from harness import ALICE
from requests_jobs import Jobs

from agent_runtime import Decision
from bot.ui import ids
from storage.requests import request_record_id


async def test_a_request_with_items_is_one_card_and_the_job_learns_each_items_fate(
    jobs: Jobs,
) -> None:
    items = [f"vol-{n:02d}" for n in range(12)]
    status, made = await jobs.ask(items=items, details="older than 90 days")
    assert status == 201, made
    cards = [p for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert len(cards) == 1 and "asks about 12 items" in str(cards[0]["blocks"])
    assert made["status"] == "pending" and made["items"][3] == {
        "item": "vol-03",
        "status": "pending",
        "decided_by": None,
        "reason": None,
    }

    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))
    await jobs.bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({3, 7}))
    status, answer = await asyncio.wait_for(waiting, 10)
    assert answer["status"] == "approved" and answer["decided_by"] == ALICE, answer
    approved = [i["item"] for i in answer["items"] if i["status"] == "approved"]
    assert approved == [i for n, i in enumerate(items) if n not in (3, 7)]
    excluded = [i for i in answer["items"] if i["status"] == "denied"]
    assert [i["item"] for i in excluded] == ["vol-03", "vol-07"]
    assert excluded[0]["reason"] == f"Excluded from the batch by {ALICE}"
    audit = await jobs.bot.services.storage.audit.read(count=200)
    decided = [e for e in audit if e.run_id == made["id"] and e.event in ("approved", "denied")]
    assert len(decided) == 12


async def test_items_come_alone_and_distinct(jobs: Jobs) -> None:
    status, body = await jobs.ask(items=["a", "a"])
    assert status == 400, body
    assert body["error"] == "'a' is listed twice in items; each item must be distinct", body
    params = [{"name": "limit", "type": "integer", "value": 4}]
    status, body = await jobs.ask(items=["a", "b"], params=params)
    assert status == 400 and "not with params" in body["error"], body
    # Never held in an undo window, an item is never taken back there: no card says so.
    status, body = await jobs.ask(items=["a", "b"], undo_window=60)
    assert status == 400 and "undo_window" in body["error"], body
    assert [p for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")] == []


async def _first_item_approved(jobs: Jobs, items: list[str]) -> dict[str, Any]:
    """A request with ``items``, its first approved by Alice (in another process): the
    request as made."""
    status, made = await jobs.ask(items=items)
    assert status == 201, made
    storage = jobs.bot.services.storage
    lead = await storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    first = (await storage.queries.batch(lead))[0]
    decided = await storage.interrupts.decide(
        first.id, ALICE, Decision.approve(), args_digest=first.args_digest, now=jobs.bot.clock.now()
    )
    assert decided.status == "recorded"
    return made


async def test_a_withdrawal_after_some_items_were_decided_is_answered_409_with_them(
    jobs: Jobs,
) -> None:
    """One of three items was approved (in another process) before the job withdraws:
    the rest are withdrawn, and the job is told the request is approved, with each item."""
    made = await _first_item_approved(jobs, ["vol-1", "vol-2", "vol-3"])
    code, body = await jobs.post(made["status_url"] + "/withdraw", {"reason": "x"})
    assert code == 409 and body["status"] == "approved", body
    assert "some of its items were decided first" in body["error"]
    assert [i["status"] for i in body["items"]] == ["approved", "withdrawn", "withdrawn"]


async def test_a_withdrawal_after_some_items_were_decided_is_not_logged_as_withdrawn(
    jobs: Jobs, caplog: pytest.LogCaptureFixture
) -> None:
    """The log says what the job was told: its pending items withdrawn, the request
    approved, not "withdrawn"."""
    made = await _first_item_approved(jobs, ["vol-1", "vol-2"])
    caplog.set_level(logging.INFO, logger="bot.api.requests")
    code, body = await jobs.post(made["status_url"] + "/withdraw", {"reason": "x"})
    assert code == 409 and body["status"] == "approved", body
    told = [r.getMessage() for r in caplog.records if r.name == "bot.api.requests"]
    assert not any(line.startswith(f"request {made['id']} withdrawn by") for line in told)
    assert any("pending items withdrawn" in line and "stands approved" in line for line in told)
