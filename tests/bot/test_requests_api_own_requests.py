"""A client's own requests through the requests API, over real HTTP and real Redis: its
idempotency key makes one request, only it sees or withdraws them, and it reports an
approved job's outcome once."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from harness import ALICE, CHANNEL
from redis_faults import reply_lost_once
from requests_jobs import ADMIN_TOKEN, Jobs

from bot.api import outcomes as outcome_api
from bot.ui import ids
from storage.errors import StorageUnavailableError
from storage.requests import request_record_id

OTHER_CHANNEL = "C0ELSEWHERE"


async def test_the_same_idempotency_key_twice_posts_one_card(jobs: Jobs) -> None:
    first_status, first = await jobs.ask(idempotency_key="cleanup-2026-11-24")
    again_status, again = await jobs.ask(idempotency_key="cleanup-2026-11-24")
    assert (first_status, again_status) == (201, 200)
    assert first["id"] == again["id"]
    assert len(jobs.bot.slack.called("chat.postMessage")) == 1
    _, other = await jobs.ask(idempotency_key="cleanup-2026-11-25")
    assert other["id"] != first["id"]
    # The same key for another request is refused: its card would show the first one.
    status, refused = await jobs.ask(idempotency_key="cleanup-2026-11-24", title="Drop prod")
    assert (status, refused["field"]) == (409, "idempotency_key"), refused
    # Keys are each client's own: another client's same key is a request of its own.
    _, token = await jobs.bot.services.storage.api_clients.create(
        "weekly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    theirs = dataclasses.replace(jobs, token=token)
    status, made = await theirs.ask(idempotency_key="cleanup-2026-11-24")
    assert status == 201 and made["id"] != first["id"]
    assert made["requested_by"] == "weekly-cleanup"
    assert len(jobs.bot.slack.called("chat.postMessage")) == 3


async def test_a_withdrawn_request_says_so_and_refuses_later_clicks(jobs: Jobs) -> None:
    _, made = await jobs.ask()
    status, withdrawn = await jobs.post(made["status_url"] + "/withdraw", {"reason": "not needed"})
    assert status == 200 and withdrawn["status"] == "withdrawn"
    assert withdrawn["decided_by"] == "nightly-cleanup" and withdrawn["reason"] == "not needed"
    [update] = jobs.bot.slack.called("chat.update")
    assert "Withdrawn by nightly-cleanup" in json.dumps(update["blocks"])

    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = jobs.bot.slack.called("chat.postEphemeral")
    assert (
        refusal["text"]
        == "This request was withdrawn by nightly-cleanup; your click changed nothing."
    )
    status, again = await jobs.post(made["status_url"] + "/withdraw")
    assert status == 409 and again["status"] == "withdrawn"


async def test_a_withdrawal_sent_again_by_redis_py_is_answered_and_shown_as_done(
    jobs: Jobs,
) -> None:
    """The withdrawal's script ran, then its reply was lost and redis-py sent it again:
    the job is told it withdrew the request, and the card says so."""
    _, made = await jobs.ask()
    with reply_lost_once(naming=made["id"]) as lost:
        status, withdrawn = await jobs.post(made["status_url"] + "/withdraw")
    assert lost == ["EVALSHA"]
    assert (status, withdrawn["status"]) == (200, "withdrawn"), withdrawn
    [update] = jobs.bot.slack.called("chat.update")
    assert "Withdrawn by nightly-cleanup" in json.dumps(update["blocks"])


async def test_the_outcome_of_an_approved_job_goes_to_the_thread_and_the_audit(
    jobs: Jobs,
) -> None:
    _, made = await jobs.ask()
    report = {"exit_status": 0, "duration_seconds": 12.5, "summary": "deleted 42 volumes"}
    status, early = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 409 and "pending" in early["error"]

    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    status, _ = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 200
    assert jobs.bot.thread()[-1] == (
        "Delete 42 stale volumes: succeeded in 12.5 s.\ndeleted 42 volumes"
    )
    # Sent again (its answer was lost): answered as taken, and told once.
    status, again = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 200 and again["status"] == "approved"
    other = {**report, "exit_status": 1}
    status, twice = await jobs.post(made["status_url"] + "/outcome", other)
    assert status == 409 and "already" in twice["error"]
    assert sum("succeeded in 12.5 s" in t for t in jobs.bot.thread()) == 1
    audit = await jobs.bot.services.storage.audit.read(count=100)
    [entry] = [e for e in audit if e.event == "outcome"]
    assert entry.run_id == made["id"] and entry.user_id == "nightly-cleanup"
    assert json.loads(entry.detail)["summary"] == "deleted 42 volumes"


@pytest.mark.parametrize("failing", ["the audit", "the thread's post"])
async def test_an_outcome_redis_failed_to_take_is_taken_once_when_the_job_reports_it_again(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """A 503 asks the job to try again: its retry is the outcome, not "reported already",
    audited and posted once."""
    _, made = await jobs.ask()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    audit = jobs.bot.services.storage.audit
    owner, name = (
        (audit, "append_once") if failing == "the audit" else (outcome_api, "post_in_thread")
    )
    working = getattr(owner, name)

    async def down_once(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(owner, name, working)
        raise StorageUnavailableError("Redis is down")

    monkeypatch.setattr(owner, name, down_once)
    report = {"exit_status": 0, "duration_seconds": 12.5}
    status, _ = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 503
    status, told = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 200, told
    outcomes = [t for t in jobs.bot.thread() if "succeeded in 12.5 s" in t]
    assert outcomes == ["Delete 42 stale volumes: succeeded in 12.5 s."]
    assert [e.event for e in await audit.read(count=100)].count("outcome") == 1


async def test_a_key_used_again_once_its_request_is_gone_reports_its_own_outcome(
    jobs: Jobs,
) -> None:
    """The first request's record is gone (its retention ended) when the job asks again
    under its key: a new card, and the new run's outcome is taken, not refused as told."""
    report = {"exit_status": 0, "duration_seconds": 1.0}
    storage = jobs.bot.services.storage
    ids_made = []
    for _ in range(2):
        status, made = await jobs.ask(idempotency_key="weekly")
        assert status == 201, made
        ids_made.append(made["id"])
        await jobs.bot.click(
            ids.APPROVE, jobs.value(), user=ALICE, message_ts=jobs.bot.message_ts(-1)
        )
        _, approved = await jobs.get(made["status_url"] + "?wait=10")
        assert approved["status"] == "approved"
        status, told = await jobs.post(made["status_url"] + "/outcome", report)
        assert status == 200, told
        await storage.client.raw.delete(storage.keys.record(request_record_id(made["id"])))
    assert ids_made[0] == ids_made[1]  # the key's, as the README says


async def test_a_client_is_kept_to_its_channels_and_its_own_requests(jobs: Jobs) -> None:
    status, refused = await jobs.ask(channel=OTHER_CHANNEL)
    assert status == 403 and refused["field"] == "channel"
    assert jobs.bot.slack.called("chat.postMessage") == []

    _, made = await jobs.ask()
    storage = jobs.bot.services.storage
    _, other_token = await storage.api_clients.create("other-job", now=datetime.now(UTC))
    other = {"Authorization": f"Bearer {other_token}"}
    status, _ = await jobs.get(made["status_url"], headers=other)
    assert status == 404
    status, _ = await jobs.post(made["status_url"] + "/withdraw", headers=other)
    assert status == 404
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    status, seen = await jobs.get(made["status_url"], headers=admin)
    assert status == 200 and seen["id"] == made["id"]
    # SIGNOFF_API_TOKEN is the admin client: any channel, asking as "admin"; it has no
    # webhook secret to sign with, so a callback URL is refused rather than never sent.
    as_admin = dataclasses.replace(jobs, token=ADMIN_TOKEN)
    status, theirs = await as_admin.ask(channel=OTHER_CHANNEL)
    assert status == 201 and theirs["requested_by"] == "admin", theirs
    status, refused = await as_admin.ask(callback_url="https://hooks.example.com/signoff")
    assert (status, refused["field"]) == (400, "callback_url"), refused
    assert "use a named client's token" in refused["error"]

    await storage.api_clients.revoke("nightly-cleanup")
    status, gone = await jobs.get(made["status_url"])
    assert status == 401 and "API token is not one of this Signoff's" in gone["error"]


async def test_a_request_refused_for_its_hours_leaves_its_key_free(jobs: Jobs) -> None:
    night = {"every": 3600, "limit": 3, "start_hour": 20, "end_hour": 6}
    status, refused = await jobs.ask(reminders=night, idempotency_key="rotate-1")
    assert (status, refused["field"]) == (400, "reminders"), refused
    status, made = await jobs.ask(idempotency_key="rotate-1")
    assert status == 201, made


async def test_a_new_client_with_a_revoked_ones_name_sees_none_of_its_requests(
    jobs: Jobs,
) -> None:
    status, made = await jobs.ask(idempotency_key="nightly-2026-11-24")
    assert status == 201, made
    storage = jobs.bot.services.storage
    await storage.api_clients.revoke("nightly-cleanup")
    _, token = await storage.api_clients.create(
        "nightly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC) + timedelta(seconds=1)
    )
    again = dataclasses.replace(jobs, token=token)
    status, seen = await again.get(made["status_url"])
    assert status == 404, seen
    status, withdrawn = await again.post(made["status_url"] + "/withdraw", {"reason": "mine"})
    assert status == 404, withdrawn
    status, reused = await again.ask(idempotency_key="nightly-2026-11-24")
    assert status == 409 and reused["field"] == "idempotency_key", reused
    record = await storage.queries.get(jobs.bot.record_id(jobs.value()))
    assert record is not None and record.state == "pending"
