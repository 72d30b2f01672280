"""One approval, one start: a job says it starts the approved command (``POST .../start``),
once; a second try is refused with the request, whose ``started_at`` and ``outcome`` say
how the approval was used."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime
from typing import Any

import pytest
from harness import ALICE
from redis import exceptions as rexc
from requests_jobs import Jobs

import signoff
from bot.ui import ids
from storage.requests import request_record_id


async def _approved(jobs: Jobs) -> dict[str, Any]:
    _, made = await jobs.ask(idempotency_key="nightly-2026-11-28")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    return made


async def test_a_pending_request_is_not_started(jobs: Jobs) -> None:
    _, made = await jobs.ask()
    status, refused = await jobs.post(made["status_url"] + "/start", {"attempt": "a" * 32})
    assert status == 409 and "only an approved job" in refused["error"], refused
    assert refused["started_at"] is None


async def test_the_first_start_is_taken_once_and_a_second_try_is_refused_saying_when(
    jobs: Jobs,
) -> None:
    made = await _approved(jobs)
    start = made["status_url"] + "/start"
    status, first = await jobs.post(start, {"attempt": "first-try"})
    assert status == 200 and first["started_at"] is not None and first["outcome"] is None
    status, again = await jobs.post(start, {"attempt": "first-try"})  # its answer lost
    assert status == 200 and again["started_at"] == first["started_at"]
    status, other = await jobs.post(start, {"attempt": "second-try"})
    assert status == 409 and other["started_at"] == first["started_at"], other
    assert (
        f"started already, at {datetime.fromisoformat(first['started_at']).isoformat()}"
        in (other["error"])
    )
    audit = await jobs.bot.services.storage.audit.read(count=100)
    assert [e.user_id for e in audit if e.event == "started"] == [made["requested_by"]]


async def test_the_reported_outcome_is_in_the_view_and_no_start_is_taken_after_it(
    jobs: Jobs,
) -> None:
    made = await _approved(jobs)
    async with signoff.Client(jobs.base, jobs.token) as client:
        await client.start(made["id"], "first-try")
        view = await client.report_outcome(made["id"], exit_status=3, duration_seconds=2.5)
        assert view.outcome is not None and view.started_at is not None
        assert (view.outcome.exit_status, view.outcome.duration_seconds) == (3, 2.5)
        assert view.outcome.not_run is None and view.outcome.reported_at >= view.started_at
        refused = await jobs.post(made["status_url"] + "/start", {"attempt": "second-try"})
    assert refused[0] == 409 and refused[1]["outcome"]["exit_status"] == 3, refused


async def test_a_job_that_did_not_run_leaves_no_start_to_take(jobs: Jobs) -> None:
    made = await _approved(jobs)
    async with signoff.Client(jobs.base, jobs.token) as client:
        await client.report_not_run(made["id"], "its check failed")
        view = await client.get(made["id"])
    assert view.outcome is not None and view.outcome.not_run == "its check failed"
    status, refused = await jobs.post(made["status_url"] + "/start", {"attempt": "second-try"})
    assert status == 409 and "outcome was reported already" in refused["error"], refused


async def test_a_key_used_again_once_its_request_is_gone_starts_its_own_command(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first request under a key was started and told its outcome, then its record went
    (its retention ended). The key's new request is a new run from the step that makes it,
    even when Redis refuses to delete the earlier run's start and end on their own: its
    command starts, and its own outcome is taken."""
    made = await _approved(jobs)
    async with signoff.Client(jobs.base, jobs.token) as client:
        await client.start(made["id"], "first-try")
        await client.report_outcome(made["id"], exit_status=3, duration_seconds=2.5)
    storage = jobs.bot.services.storage
    await storage.client.raw.delete(storage.keys.record(request_record_id(made["id"])))
    delete = storage.client.raw.delete

    async def keeping_the_runs_marks(*names: str) -> int:
        if any(name.endswith((":job", ":ended")) for name in names):
            raise rexc.ConnectionError("Connection closed by server.")
        return await delete(*names)

    monkeypatch.setattr(storage.client.raw, "delete", keeping_the_runs_marks)
    status, again = await jobs.ask(idempotency_key="nightly-2026-11-28")
    assert status == 201 and again["id"] == made["id"], again
    assert again["started_at"] is None and again["outcome"] is None, again
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE, message_ts=jobs.bot.message_ts(-1))
    await jobs.get(again["status_url"] + "?wait=10")
    status, started = await jobs.post(again["status_url"] + "/start", {"attempt": "next-run"})
    assert status == 200 and started["started_at"] is not None, started
    assert started["outcome"] is None, started
    report = {"exit_status": 0, "duration_seconds": 1.0}
    status, told = await jobs.post(again["status_url"] + "/outcome", report)
    assert status == 200 and told["outcome"]["exit_status"] == 0, told


async def test_a_key_used_again_once_its_request_is_gone_has_the_same_outcome_audited_anew(
    jobs: Jobs,
) -> None:
    """The new request's job reports what the earlier one did (same exit, same duration):
    its own outcome, audited (and told to webhooks) as the earlier one's was."""
    report = {"exit_status": 0, "duration_seconds": 1.0}
    storage = jobs.bot.services.storage
    for _ in range(2):
        status, made = await jobs.ask(idempotency_key="weekly")
        assert status == 201, made
        await jobs.bot.click(
            ids.APPROVE, jobs.value(), user=ALICE, message_ts=jobs.bot.message_ts(-1)
        )
        await jobs.get(made["status_url"] + "?wait=10")
        status, told = await jobs.post(made["status_url"] + "/outcome", report)
        assert status == 200, told
        await storage.client.raw.delete(storage.keys.record(request_record_id(made["id"])))
    audit = await storage.audit.read(count=100)
    assert [e.run_id for e in audit if e.event == "outcome"] == [made["id"], made["id"]]


async def _approved_and_asked_again(jobs: Jobs) -> tuple[dict[str, Any], dict[str, Any]]:
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(checked["status_url"] + "?wait=10")
    status, again = await jobs.ask(
        supersedes=checked["id"], acts_on="vol-a\n", idempotency_key="asked-again"
    )
    assert status == 201, again
    return checked, again


async def test_a_superseded_approval_is_not_started_and_names_the_request_that_superseded_it(
    jobs: Jobs,
) -> None:
    checked, again = await _approved_and_asked_again(jobs)
    status, refused = await jobs.post(checked["status_url"] + "/start", {"attempt": "late-try"})
    assert status == 409, refused
    assert f"request {again['id']} superseded this approval" in refused["error"], refused
    assert refused["status"] == "approved" and refused["superseded_by"] == again["id"]
    assert refused["started_at"] is None
    _, seen = await jobs.get(checked["status_url"])
    assert seen["superseded_by"] == again["id"] and seen["started_at"] is None
    audit = await jobs.bot.services.storage.audit.read(count=100)
    assert "started" not in [e.event for e in audit]


async def test_an_approval_whose_command_was_started_is_not_asked_again(jobs: Jobs) -> None:
    """A start and a supersede of one approval: whichever is first, the other is refused."""
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(checked["status_url"] + "?wait=10")
    status, _ = await jobs.post(checked["status_url"] + "/start", {"attempt": "first-try"})
    assert status == 200
    status, refused = await jobs.ask(
        supersedes=checked["id"], acts_on="vol-a\n", idempotency_key="asked-again"
    )
    assert status == 409 and "command was started already" in refused["error"], refused
    _, seen = await jobs.get(checked["status_url"])
    assert seen["superseded_by"] is None and seen["started_at"] is not None


async def test_a_start_while_the_approval_is_being_asked_again_is_retried_later(
    jobs: Jobs,
) -> None:
    """Marked as asked again by a request still being made: not started, and not refused
    for good either (if that request is refused, the approval stands again)."""
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(checked["status_url"] + "?wait=10")
    storage, now = jobs.bot.services.storage, jobs.bot.services.clock.now()
    being_made = request_record_id("req_" + "e" * 32)
    rid = request_record_id(checked["id"])
    assert await storage.interrupts.supersede(rid, by=being_made, now=now) is not None
    status, refused = await jobs.post(checked["status_url"] + "/start", {"attempt": "first-try"})
    assert status == 503 and "being asked again" in refused["error"], refused
    await storage.interrupts.unsupersede(rid, by=being_made, now=now)
    status, started = await jobs.post(checked["status_url"] + "/start", {"attempt": "first-try"})
    assert status == 200 and started["started_at"] is not None, started


async def test_the_client_retries_that_start_after_the_retry_after_it_was_given(
    jobs: Jobs,
) -> None:
    """``Client.start`` told 503 with ``Retry-After: 1`` asks again no sooner, and takes
    the start once the approval stands again."""
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(checked["status_url"] + "?wait=10")
    storage, now = jobs.bot.services.storage, jobs.bot.services.clock.now()
    being_made = request_record_id("req_" + "e" * 32)
    rid = request_record_id(checked["id"])
    assert await storage.interrupts.supersede(rid, by=being_made, now=now) is not None
    refused = asyncio.Event()
    told = _Told(refused)
    logging.getLogger("signoff.client").addHandler(told)
    try:
        async with signoff.Client(jobs.base, jobs.token) as client:
            starting = asyncio.create_task(client.start(checked["id"], "first-try"))
            await asyncio.wait_for(refused.wait(), 10)  # its first try was told 503
            since = time.monotonic()
            await storage.interrupts.unsupersede(rid, by=being_made, now=now)
            started = await asyncio.wait_for(starting, 10)
    finally:
        logging.getLogger("signoff.client").removeHandler(told)
    assert time.monotonic() - since >= 0.9  # not asked again before its Retry-After
    assert started.started_at is not None and started.superseded_by is None


class _Told(logging.Handler):
    """Sets ``event`` when the client says it will try again."""

    def __init__(self, event: asyncio.Event) -> None:
        super().__init__(logging.WARNING)
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if "being asked again" in record.getMessage():
            self.event.set()
