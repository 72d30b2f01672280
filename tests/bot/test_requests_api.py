"""The requests API over real HTTP and real Redis: a job asks, approvers decide in Slack,
and the job learns the answer from a long-poll the moment it is given."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from fakes import Fault
from harness import ALICE, BOB, CAROL, CHANNEL, Harness
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr
from redis_faults import reply_lost_once

import bot.api.requests as requests_api
import signoff
import signoff.client as client_module
from agent_runtime import Decision
from bot.api.openapi import OPENAPI_PATH
from bot.api.request_records import REQUESTS_PATH
from bot.process.logs import configure_logging
from bot.process.web import operator_app
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from signoff import gate, gate_ask, gate_wait
from signoff.gate_cli import REFUSED, WITHDRAWN
from storage.audit import AuditEntry
from storage.errors import StorageUnavailableError
from storage.requests import request_record_id

ADMIN_TOKEN = "admin-token-" + "x" * 24
OTHER_CHANNEL = "C0ELSEWHERE"


@dataclass
class Jobs:
    """A bot with the requests API, and one named client's token."""

    bot: Harness
    base: str
    http: aiohttp.ClientSession
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def ask(self, **fields: Any) -> tuple[int, dict[str, Any]]:
        body = {"title": "Delete 42 stale volumes", "channel": CHANNEL, "approvers": [ALICE, BOB]}
        async with self.http.post(
            self.base + REQUESTS_PATH, json={**body, **fields}, headers=self.auth
        ) as r:
            return r.status, await r.json()

    async def get(self, path: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        async with self.http.get(self.base + path, headers=kw.pop("headers", self.auth)) as r:
            return r.status, await r.json()

    async def post(self, path: str, body: Any = None, **kw: Any) -> tuple[int, dict[str, Any]]:
        headers = kw.pop("headers", self.auth)
        async with self.http.post(self.base + path, json=body, headers=headers) as r:
            return r.status, await r.json()

    def card(self, index: int = -1) -> dict[str, Any]:
        return self.bot.posted(index)

    def value(self, index: int = -1) -> str:
        return str(self.card(index)["blocks"][-1]["elements"][0]["value"])


@pytest.fixture
async def jobs(make_bot: Any) -> AsyncIterator[Jobs]:
    bot: Harness = await make_bot()
    storage = bot.services.storage
    _, token = await storage.api_clients.create(
        "nightly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    server = TestServer(
        operator_app(bot.services, api_token=SecretStr(ADMIN_TOKEN)), host="127.0.0.1", port=0
    )
    await server.start_server()
    async with aiohttp.ClientSession() as http:
        yield Jobs(bot=bot, base=f"http://127.0.0.1:{server.port}", http=http, token=token)
    await server.close()


async def test_a_job_asks_and_a_long_poll_answers_the_moment_it_is_approved(jobs: Jobs) -> None:
    status, made = await jobs.ask(
        details="volumes older than 90 days <!channel>",
        params=[{"name": "limit", "type": "integer", "value": 42}],
    )
    assert status == 201, made
    assert made["status"] == "pending" and made["requested_by"] == "nightly-cleanup"
    assert made["permalink"].startswith("https://fake.slack.test/archives/C0OPS/p")
    assert made["status_url"] == f"{REQUESTS_PATH}/{made['id']}"
    card = json.dumps(jobs.card()["blocks"])
    assert "Delete 42 stale volumes" in card and "Requested by nightly-cleanup" in card
    assert "&lt;!channel&gt;" in card and "<!channel>" not in card
    assert '\\"limit\\": 42' in card

    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    status, answer = await asyncio.wait_for(waiting, 10)
    assert status == 200
    assert answer["status"] == "approved" and answer["decided_by"] == ALICE
    assert answer["params"] == {"limit": 42}
    # Slack's names for the ids, so a job's log can say who (users.info, cached).
    assert answer["names"] == {ALICE: "u0alice", BOB: "u0bob"}


async def test_a_long_poll_with_nothing_decided_answers_pending_when_the_wait_ends(
    jobs: Jobs,
) -> None:
    _, made = await jobs.ask()
    status, answer = await jobs.get(made["status_url"] + "?wait=0.2")
    assert status == 200 and answer["status"] == "pending"


async def test_while_slack_is_down_a_view_answers_with_ids_and_no_names(jobs: Jobs) -> None:
    jobs.bot.slack.down = True
    status, made = await jobs.ask(approvers=[CAROL])
    assert status == 201 and made["approvers"] == [CAROL] and made["names"] == {}


async def test_a_card_slack_refused_says_why_until_the_outbox_posts_it(jobs: Jobs) -> None:
    """The app is not in the channel yet: the job is told what Slack answered; once the
    app is invited, the outbox posts the card and the view links it."""
    refused = Fault(status=200, body={"ok": False, "error": "not_in_channel"})
    jobs.bot.slack.faults["chat.postMessage"].append(refused)
    status, made = await jobs.ask()
    assert status == 201 and made["not_posted"] == "not_in_channel" and made["permalink"] is None
    assert (await jobs.get(made["status_url"]))[1]["not_posted"] == "not_in_channel"

    jobs.bot.clock.advance(timedelta(seconds=31))
    await Scheduler(jobs.bot.services).tick()
    _, view = await jobs.get(made["status_url"])
    assert view["not_posted"] is None and view["permalink"].startswith("https://fake.slack.test/")


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
    assert len(jobs.bot.slack.called("chat.postMessage")) == 2


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


async def test_a_request_whose_stored_data_is_damaged_is_said_so_not_storage_down(
    jobs: Jobs,
) -> None:
    """Asking again will never help: not a 503 (which the client retries without end) but
    an error naming the damage, which the client raises."""
    _, made = await jobs.ask()
    storage = jobs.bot.services.storage
    await storage.client.raw.set(storage.keys.request(made["id"]), "{broken")
    status, body = await jobs.get(made["status_url"] + "?wait=5")
    assert status == 500 and "damaged" in body["error"], body
    async with signoff.Client(jobs.base, jobs.token) as client:
        with pytest.raises(signoff.RequestRefused):
            await asyncio.wait_for(client.wait(made["id"]), 10)


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
    status, twice = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 409 and "already" in twice["error"]
    audit = await jobs.bot.services.storage.audit.read(count=100)
    [entry] = [e for e in audit if e.event == "outcome"]
    assert entry.run_id == made["id"] and entry.user_id == "nightly-cleanup"
    assert json.loads(entry.detail)["summary"] == "deleted 42 volumes"


async def test_an_outcome_redis_failed_to_audit_is_taken_when_the_job_reports_it_again(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503 asks the job to try again: its retry is the outcome, not "reported already"."""
    _, made = await jobs.ask()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    audit = jobs.bot.services.storage.audit
    append = audit.append

    async def down_once(entry: AuditEntry) -> str:
        monkeypatch.setattr(audit, "append", append)
        raise StorageUnavailableError("Redis is down")

    monkeypatch.setattr(audit, "append", down_once)
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
    for _ in range(2):
        status, made = await jobs.ask(idempotency_key="weekly")
        assert status == 201, made
        await jobs.bot.click(
            ids.APPROVE, jobs.value(), user=ALICE, message_ts=jobs.bot.message_ts(-1)
        )
        _, approved = await jobs.get(made["status_url"] + "?wait=10")
        assert approved["status"] == "approved"
        status, told = await jobs.post(made["status_url"] + "/outcome", report)
        assert status == 200, told
        await storage.client.raw.delete(storage.keys.record(request_record_id(made["id"])))


async def test_approvers_may_edit_only_editable_params_and_the_job_gets_the_edit(
    jobs: Jobs,
) -> None:
    params = [
        {"name": "limit", "type": "integer", "value": 42, "editable": True},
        {"name": "region", "type": "string", "value": "eu-west-1"},
        {"name": "ratio", "type": "number", "value": 0.5, "editable": True},
    ]
    _, made = await jobs.ask(params=params)
    value = jobs.value()
    locked = json.dumps({"limit": 42, "region": "us-east-1", "ratio": 0.5})
    status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=locked)
    assert status == 200 and "'region' cannot be edited" in body
    wrong_type = json.dumps({"limit": "all", "region": "eu-west-1", "ratio": 0.5})
    status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=wrong_type)
    assert "param 'limit' must be an integer, got 'all'" in body

    for not_a_number in ("NaN", "Infinity", "1e999"):
        text = f'{{"limit": 42, "region": "eu-west-1", "ratio": {not_a_number}}}'
        status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=text)
        assert status == 200 and f"{not_a_number} is" in str(json.loads(body)["errors"]), body
    edited = {"limit": 10, "region": "eu-west-1", "ratio": 0.25}
    status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=json.dumps(edited))
    assert status == 200 and "errors" not in body
    _, answer = await jobs.get(made["status_url"] + "?wait=10")
    assert answer["status"] == "edited" and answer["params"] == edited


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

    await storage.api_clients.revoke("nightly-cleanup")
    status, gone = await jobs.get(made["status_url"])
    assert status == 401 and "API token is not one of this Signoff's" in gone["error"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"channel": "#ops"}, "channel"),
        ({"approvers": ["@oncall"]}, "approvers.0"),
        ({"approvers": []}, None),
        ({"expires_in": 0}, "expires_in"),
        ({"params": [{"name": "n", "type": "integer", "value": "x"}]}, "params.0"),
        ({"params": [{"name": "r", "type": "number", "value": float("nan")}]}, "params.0"),
        ({"params": [{"name": "r", "type": "number", "value": float("inf")}]}, "params.0"),
        ({"callback_url": "http://169.254.169.254/latest"}, "callback_url"),
        ({"callback_url": "http://example.com/hook"}, "callback_url"),
        ({"surprise": 1}, "surprise"),
        # A quorum approves as shown: one person's edit or reply would end it alone.
        (
            {
                "min_approvals": 2,
                "params": [{"name": "n", "type": "integer", "value": 1, "editable": True}],
            },
            None,
        ),
        ({"min_approvals": 2, "allow_reply": True}, None),
        ({"dangerous": True, "if_nobody_decides": "approve"}, None),
        # Reminders only on a day's hours; a quorum of one person named twice.
        ({"reminders": {"start_hour": 20, "end_hour": 6}}, "reminders"),
        ({"approvers": [ALICE, ALICE], "min_approvals": 2}, None),
        # A job reads approved items a line each: one holding a newline would add another.
        ({"items": ["vol-1\nprod-db", "prod-db"]}, "items.0"),
        # Loopback spelled the old ways resolvers take.
        ({"callback_url": "https://2130706433/hook"}, "callback_url"),
        ({"callback_url": "https://127.1/hook"}, "callback_url"),
        ({"callback_url": "https://0x7f.0.0.1/hook"}, "callback_url"),
    ],
)
async def test_bad_input_is_a_400_naming_the_field_and_posts_nothing(
    jobs: Jobs, fields: dict[str, Any], field: str | None
) -> None:
    status, refused = await jobs.ask(**fields)
    assert status == 400, refused
    assert refused.get("field") == field and refused["error"]
    assert jobs.bot.slack.called("chat.postMessage") == []


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        (
            {"params": [{"name": "limit", "value": 42}]},
            "params.0: param 'limit' has no type, so it is a string; for 42 give \"type\": "
            '"integer"',
        ),
        (
            {"channel": "#ops"},
            "channel: use the channel's id (such as C0123ABCD; Slack shows it in the "
            "channel's details), not its name",
        ),
        (
            {"approvers": ["oncall"]},
            "approvers.0: use user ids (U0123ABCD), user group ids (S0123ABCD) or group "
            "handles (@oncall)",
        ),
        (
            {
                "params": [
                    {"name": "limit", "type": "integer", "value": 1},
                    {"name": "LIMIT", "type": "integer", "value": 2, "editable": True},
                ]
            },
            "two params are named 'LIMIT' whatever their case; a job reads them both as "
            "SIGNOFF_PARAM_LIMIT, so names must be distinct",
        ),
        (
            {"approvers": [ALICE, "U0NOBODY"]},
            "approvers.1: Slack has no user U0NOBODY in this workspace (a typo?)",
        ),
    ],
)
async def test_likely_mistakes_are_told_what_to_give_instead(
    jobs: Jobs, fields: dict[str, Any], said: str
) -> None:
    status, refused = await jobs.ask(**fields)
    assert (status, refused["error"]) == (400, said)
    assert jobs.bot.slack.called("chat.postMessage") == []


async def test_unknown_requests_and_bad_waits_are_clear_errors(jobs: Jobs) -> None:
    status, body = await jobs.get(f"{REQUESTS_PATH}/req_{'0' * 32}")
    assert status == 404 and body["field"] == "id"
    status, body = await jobs.get(f"{REQUESTS_PATH}/run_1%2Fask")
    assert status == 404 and body["field"] == "id"
    _, made = await jobs.ask()
    status, body = await jobs.get(made["status_url"] + "?wait=forever")
    assert status == 400 and body["field"] == "wait"
    status, body = await jobs.get(made["status_url"], headers={})
    assert status == 401 and body["error"].startswith("send an API token as")


async def test_a_token_that_is_not_utf8_is_a_401_on_every_guarded_route(jobs: Jobs) -> None:
    port = int(jobs.base.rsplit(":", 1)[1])

    async def status_of(method: str, path: str, authorization: bytes) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode()
            + b"Content-Length: 2\r\nAuthorization: "
            + authorization
            + b"\r\n\r\n{}"
        )
        answer = await reader.read()
        writer.close()
        return int(answer.split()[1])

    routes = [
        ("GET", f"{REQUESTS_PATH}/req_{'0' * 32}"),
        ("POST", REQUESTS_PATH),
        ("POST", "/api/runs"),
        ("POST", "/agui/cleanup"),
    ]
    for method, path in routes:
        for authorization in (b"Bearer sgn_\xff", b"Bearer \xc3("):
            assert await status_of(method, path, authorization) == 401, (path, authorization)


async def test_a_user_group_named_by_its_handle_decides(jobs: Jobs) -> None:
    jobs.bot.slack.groups["S0ONCALL"] = [ALICE, BOB]
    jobs.bot.slack.handles["S0ONCALL"] = "oncall"
    jobs.bot.slack.down = True  # a passing outage: try again, not "no such group"
    status, refused = await jobs.ask(approvers=["@oncall"], min_approvals=2)
    assert (status, refused["field"]) == (503, "approvers.0"), refused
    assert "Slack could not be reached" in refused["error"]
    assert jobs.bot.slack.called("chat.postMessage") == []
    jobs.bot.slack.down = False
    status, made = await jobs.ask(approvers=["@oncall"], min_approvals=2)
    assert status == 201, made
    assert made["approvers"] == ["S0ONCALL"] and made["names"]["S0ONCALL"] == "@oncall"
    for user in (ALICE, BOB):
        await jobs.bot.click(ids.APPROVE, jobs.value(), user=user)
    _, answer = await jobs.get(made["status_url"] + "?wait=10")
    assert answer["status"] == "approved" and answer["approvals"] == [ALICE, BOB]


async def test_a_reminder_is_counted_and_audited(jobs: Jobs) -> None:
    _, made = await jobs.ask(reminders={"every": 60, "limit": 2, "start_hour": 0, "end_hour": 24})
    jobs.bot.clock.advance(timedelta(seconds=61))
    await Scheduler(jobs.bot.services).tick()
    _, seen = await jobs.get(made["status_url"])
    assert seen["reminders_sent"] == 1 and seen["status"] == "pending"
    assert jobs.bot.thread()[-1].startswith("Reminder: this request is still waiting")
    audit = await jobs.bot.services.storage.audit.read(count=100)
    assert [e.run_id for e in audit if e.event == "reminded"] == [made["id"]]


async def test_a_reply_reaches_the_job_when_replies_are_allowed(jobs: Jobs) -> None:
    _, made = await jobs.ask(allow_reply=True)
    buttons = [e["action_id"] for e in jobs.card()["blocks"][-1]["elements"]]
    assert ids.REPLY in buttons
    await jobs.bot.click(ids.DENY, jobs.value(), user=BOB)
    await jobs.bot.slack.wait_calls("views.open")
    assert "goes back to the job that asked" in json.dumps(jobs.bot.slack.called("views.open"))
    await jobs.bot.click(ids.REPLY, jobs.value(), user=BOB)
    await jobs.bot.slack.wait_calls("views.open", 2)
    form = json.dumps(jobs.bot.slack.called("views.open")[-1]["view"])
    assert "goes to the job that asked" in form and "does not run" not in form
    status, _ = await jobs.bot.submit(ids.REPLY_VIEW, jobs.value(), user=BOB, text="only vol-7")
    assert status == 200
    _, answer = await jobs.get(made["status_url"] + "?wait=10")
    assert answer["status"] == "responded" and answer["reply"] == "only vol-7"
    assert answer["decided_by"] == BOB
    await jobs.bot.slack.wait_calls("chat.update")
    headline = jobs.bot.slack.called("chat.update")[-1]["blocks"][0]["text"]["text"]
    assert headline.startswith("Replied:") and "instead of run" not in headline


async def test_with_an_undo_window_the_job_hears_of_the_decision_only_when_it_ends(
    jobs: Jobs,
) -> None:
    _, made = await jobs.ask(undo_window=60)
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.bot.slack.wait_calls("chat.update")
    status, held = await jobs.get(made["status_url"] + "?wait=0.2")
    assert status == 200 and held["status"] == "pending" and held["held_by"] == ALICE
    assert held["held_until"] is not None

    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))
    jobs.bot.clock.advance(timedelta(seconds=60))
    await Scheduler(jobs.bot.services).tick()
    status, answer = await asyncio.wait_for(waiting, 10)
    assert answer["status"] == "approved" and answer["decided_by"] == ALICE
    assert answer["held_until"] is None
    assert jobs.bot.slack.called("chat.update")[-1]["blocks"][0]["text"]["text"].startswith(
        "Approved:"
    )


async def test_asking_again_needs_an_approved_request_that_showed_what_it_acts_on(
    jobs: Jobs,
) -> None:
    _, plain = await jobs.ask(idempotency_key="plain")
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    status, body = await jobs.ask(supersedes=checked["id"])
    assert status == 400 and "supersedes needs acts_on" in body["error"], body
    status, body = await jobs.ask(supersedes=checked["id"], acts_on="vol-a\n")
    assert status == 409 and "is pending, not approved" in body["error"], body
    bot = jobs.bot
    await bot.click(ids.APPROVE, jobs.value(1), user=ALICE, message_ts=bot.message_ts(1))
    await bot.click(ids.APPROVE, jobs.value(0), user=ALICE, message_ts=bot.message_ts(0))
    for made in (plain, checked):
        _, seen = await asyncio.wait_for(jobs.get(made["status_url"] + "?wait=10"), 15)
        assert seen["status"] == "approved", seen
    status, body = await jobs.ask(supersedes=plain["id"], acts_on="vol-a\n")
    assert status == 400 and "showed no acts_on" in body["error"], body
    status, body = await jobs.ask(supersedes="req_" + "f" * 32, acts_on="vol-a\n")
    assert status == 404, body
    # Asking again under the approved request's own key would answer with its approval.
    status, body = await jobs.ask(
        supersedes=checked["id"], acts_on="vol-a\nvol-c\n", idempotency_key="checked"
    )
    assert status == 409 and "names this request itself" in body["error"], body
    posted = len(jobs.bot.slack.called("chat.postMessage"))
    asking_again = {"supersedes": checked["id"], "acts_on": "vol-a\nvol-c\n"}
    status, again = await jobs.ask(**asking_again, idempotency_key="again")
    assert status == 201, again
    card = jobs.bot.slack.called("chat.postMessage")[posted]
    assert card["thread_ts"] == jobs.bot.message_ts(1)  # in the approved card's thread
    assert "Changed since it was approved" in str(card["blocks"])
    # A retry of the same call (its answer was lost) re-attaches; another call is refused.
    status, retried = await jobs.ask(**asking_again, idempotency_key="again")
    assert (status, retried["id"]) == (200, again["id"]), retried
    assert len(jobs.bot.slack.called("chat.postMessage")) == posted + 1
    status, body = await jobs.ask(supersedes=checked["id"], acts_on="vol-a\n")
    assert status == 409 and "asked again already" in body["error"], body


async def test_the_document_lists_the_404_of_asking_again_for_an_unknown_request(
    jobs: Jobs,
) -> None:
    """A client generated from the document is told a 404 can come from creating."""
    status, body = await jobs.ask(supersedes="req_" + "f" * 32, acts_on="vol-a\n")
    assert status == 404, body
    _, document = await jobs.get(OPENAPI_PATH)
    assert "404" in document["paths"][REQUESTS_PATH]["post"]["responses"]


async def test_a_request_refused_for_its_hours_leaves_its_key_free(jobs: Jobs) -> None:
    night = {"every": 3600, "limit": 3, "start_hour": 20, "end_hour": 6}
    status, refused = await jobs.ask(reminders=night, idempotency_key="rotate-1")
    assert (status, refused["field"]) == (400, "reminders"), refused
    status, made = await jobs.ask(idempotency_key="rotate-1")
    assert status == 201, made


async def test_a_gate_asks_again_when_its_check_changed_after_a_reply(
    jobs: Jobs, tmp_path: Path
) -> None:
    """A reply is an answer the command runs on (``--allow-reply``): what it acts on
    changing after it asks again, as after an approval."""
    listing, ran = tmp_path / "listing", tmp_path / "ran"
    listing.write_text("vol-a\nvol-b\n")
    request = signoff.NewRequest(
        title="Delete volumes", channel=CHANNEL, approvers=[ALICE, BOB], allow_reply=True
    )
    gating = asyncio.create_task(
        gate._gate(
            signoff.Client(jobs.base, jobs.token),
            request,
            ["touch", str(ran)],
            check=f"cat {listing}",
        )
    )
    await jobs.bot.slack.wait_calls("chat.postMessage")
    listing.write_text("vol-a\nvol-c\n")  # what it acts on moves meanwhile
    await jobs.bot.click(ids.REPLY, jobs.value(), user=BOB)
    await jobs.bot.slack.wait_calls("views.open")
    status, _ = await jobs.bot.submit(ids.REPLY_VIEW, jobs.value(), user=BOB, text="only vol-a")
    assert status == 200
    await jobs.bot.slack.wait_calls("chat.postMessage", 2)  # asked again
    slack = jobs.bot.slack
    await slack.wait_for(
        lambda: any("Changed since" in str(u["blocks"]) for u in slack.called("chat.update"))
    )
    [marked] = [u for u in slack.called("chat.update") if "Changed since" in str(u["blocks"])]
    assert "*Reply:* only vol-a" in str(marked["blocks"])
    again = jobs.bot.message_ts(-1)
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE, message_ts=again)
    assert await asyncio.wait_for(gating, 15) == 0
    assert ran.exists()


async def test_a_gate_stopped_while_it_checks_again_does_not_run_its_command(
    jobs: Jobs, tmp_path: Path
) -> None:
    count, rechecking, ran = tmp_path / "count", tmp_path / "rechecking", tmp_path / "ran"
    check = (
        f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}; "
        f'if [ "$n" -ge 1 ]; then touch {rechecking}; sleep 30; fi; echo vol-a'
    )
    request = signoff.NewRequest(title="Delete volumes", channel=CHANNEL, approvers=[ALICE])
    gating = asyncio.create_task(
        gate._gate(signoff.Client(jobs.base, jobs.token), request, ["touch", str(ran)], check=check)
    )
    await jobs.bot.slack.wait_calls("chat.postMessage")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    async with asyncio.timeout(10):
        while True:
            if rechecking.exists():
                break
            await asyncio.sleep(0.01)  # the check is a shell command: poll the file it writes
    os.kill(os.getpid(), signal.SIGTERM)  # the job is stopped during the second check
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN  # without waiting for the check
    assert not ran.exists()


async def test_a_gate_stopped_while_its_request_is_posted_withdraws_it(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    posted, release = asyncio.Event(), asyncio.Event()
    post = requests_api.post_interrupt

    async def slow_answer(services: Any, record: Any) -> Any:
        answer = await post(services, record)
        posted.set()
        await release.wait()  # Slack took the card; the answer to the job is slow
        return answer

    stopped = asyncio.Event()
    stopped_while_asking = gate_ask._stopped_while_asking

    async def noted(*args: Any) -> Any:
        stopped.set()
        return await stopped_while_asking(*args)

    monkeypatch.setattr(requests_api, "post_interrupt", slow_answer)
    monkeypatch.setattr(gate_ask, "_stopped_while_asking", noted)
    request = signoff.NewRequest(title="Rotate", channel=CHANNEL, approvers=[ALICE])
    gating = asyncio.create_task(gate._gate(signoff.Client(jobs.base, jobs.token), request, []))
    await asyncio.wait_for(posted.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(stopped.wait(), 10)  # stopped before Signoff answered
    release.set()
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN
    record = await jobs.bot.services.storage.queries.get(jobs.bot.record_id(jobs.value()))
    assert record is not None and record.state == "cancelled"


async def test_two_asks_again_at_once_make_one_card(jobs: Jobs) -> None:
    """Two gates re-attached to one approved request each find what it acts on changed and
    ask again at once: one new card, and the other is told it was asked again already."""
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    _, seen = await asyncio.wait_for(jobs.get(checked["status_url"] + "?wait=10"), 15)
    assert seen["status"] == "approved", seen
    meta = jobs.bot.services.storage.requests
    keep = meta.keep
    second: list[tuple[int, dict[str, Any]]] = []

    async def the_other_asks_meanwhile(run_id: str, *args: Any, **kwargs: Any) -> Any:
        if not second:
            second.append((0, {}))
            second[0] = await jobs.ask(
                supersedes=checked["id"], acts_on="vol-a\n", idempotency_key="gate-2"
            )
        return await keep(run_id, *args, **kwargs)

    meta.keep = the_other_asks_meanwhile  # type: ignore[method-assign]
    first = await jobs.ask(supersedes=checked["id"], acts_on="vol-a\n", idempotency_key="gate-1")
    assert sorted([first[0], second[0][0]]) == [201, 409], (first, second)
    refused = first[1] if first[0] == 409 else second[0][1]
    assert "asked again already" in refused["error"], refused
    cards = [p for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert len(cards) == 2  # the approved one and one asking again


async def _as_client(jobs: Jobs, name: str, channels: tuple[str, ...]) -> Jobs:
    """The same server, through a new client that may post in ``channels``."""
    storage = jobs.bot.services.storage
    _, token = await storage.api_clients.create(name, channels=channels, now=datetime.now(UTC))
    return dataclasses.replace(jobs, token=token)


async def test_a_jobs_request_climbs_a_ladder_of_two_steps_then_is_denied(jobs: Jobs) -> None:
    jobs.bot.slack.groups["S0TOKYO"] = ["U0SAM"]
    jobs.bot.slack.handles["S0TOKYO"] = "oncall"
    climb: dict[str, Any] = {
        "approvers": [ALICE],
        "expires_in": 3600,
        "on_expiry": "escalate",
        "escalate_channel": "C0NYC",
        "escalate_to": [BOB],
        "escalate_expires_in": 1800,
        "ladder": [{"channel": "C0TOKYO", "approvers": ["@oncall"], "expires_in": 600}],
    }
    # A client may not reach a channel it may not post in by escalating there.
    status, refused = await jobs.ask(**climb)
    assert status == 403 and refused["field"] == "escalate_channel", refused
    allowed = (CHANNEL, "C0NYC")
    status, refused = await (await _as_client(jobs, "follow-the-sun-1", allowed)).ask(**climb)
    assert status == 403 and refused["field"] == "ladder.0.channel", refused
    everywhere = (CHANNEL, "C0NYC", "C0TOKYO")
    jobs = await _as_client(jobs, "follow-the-sun", everywhere)
    status, made = await jobs.ask(**climb)
    assert status == 201, made
    steps = str(jobs.card(0)["blocks"])
    assert f"it goes to <@{BOB}>; if nobody decides by" in steps
    assert "it goes to <!subteam^S0TOKYO>" in steps
    record = await jobs.bot.services.storage.queries.get(jobs.bot.record_id(jobs.value(0)))
    assert record is not None and record.policy.ladder[0].group_members == ("U0SAM",)
    assert steps.count("If nobody decides by") + steps.count("if nobody decides by") == 3

    scheduler = Scheduler(jobs.bot.services)
    channels = []
    for wait in (3600, 1800, 600):
        jobs.bot.clock.advance(timedelta(seconds=wait))
        await scheduler.tick()
        _, seen = await jobs.get(made["status_url"])
        channels.append(seen["status"])
    posted = [p["channel"] for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert posted == [CHANNEL, "C0NYC", "C0TOKYO"]
    assert channels == ["pending", "pending", "expired"]


async def test_a_ladder_needs_an_escalation_and_someone_at_each_step(jobs: Jobs) -> None:
    status, body = await jobs.ask(ladder=[{"approvers": [BOB]}])
    assert status == 400 and "a ladder follows an escalation" in body["error"], body
    status, body = await jobs.ask(
        on_expiry="escalate", escalate_to=[BOB], ladder=[{"channel": "C0TOKYO"}]
    )
    assert status == 400 and body["field"] == "ladder.0", body


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
    assert [p for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")] == []


class DecisionSpans(InMemorySpanExporter):
    """Keeps the finished spans; ``decided`` is set once a decision's span has ended."""

    def __init__(self) -> None:
        super().__init__()
        self.decided = asyncio.Event()

    def export(self, spans: Any) -> Any:
        result = super().export(spans)
        if any(s.name == "signoff.decision" for s in spans):
            self.decided.set()
        return result


async def test_a_requests_spans_join_the_trace_the_job_sent(jobs: Jobs) -> None:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the first test in this process to trace
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = DecisionSpans()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    job_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{job_trace}-00f067aa0ba902b7-01"
    body = {"title": "Delete 42 stale volumes", "channel": CHANNEL, "approvers": [ALICE]}
    headers = {**jobs.auth, "traceparent": parent}
    async with jobs.http.post(jobs.base + REQUESTS_PATH, json=body, headers=headers) as r:
        assert r.status == 201
        made = await r.json()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await asyncio.wait_for(jobs.get(made["status_url"] + "?wait=10"), 15)

    def spans() -> dict[str, Any]:
        return {s.name: s for s in exporter.get_finished_spans()}

    await asyncio.wait_for(exporter.decided.wait(), 10)  # ended once the card is updated
    created, decided = spans()["signoff.request.create"], spans()["signoff.decision"]
    for span in (created, decided):
        assert format(span.context.trace_id, "032x") == job_trace  # in the job's trace
        assert format(span.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert decided.attributes["signoff.user"] == ALICE
    assert decided.attributes["signoff.record_id"].startswith(made["id"])


async def test_a_gate_whose_token_is_revoked_while_it_waits_is_refused_not_unreachable(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_wait, "_RENEW", 0.1)  # the long-poll is renewed at once
    async with signoff.Client(jobs.base, jobs.token) as client:
        view = await client.create(
            signoff.NewRequest(title="Delete 42 stale volumes", channel=CHANNEL, approvers=[ALICE])
        )
        waiting = asyncio.create_task(gate_wait.wait(client, view, asyncio.Event()))
        assert await jobs.bot.services.storage.api_clients.revoke("nightly-cleanup")
        assert await asyncio.wait_for(waiting, 10) == REFUSED


async def test_the_python_client_asks_waits_and_reports_what_the_job_did(jobs: Jobs) -> None:
    async with signoff.Client(jobs.base, jobs.token) as client:
        request = await client.create(
            signoff.NewRequest(title="Delete 42 stale volumes", channel=CHANNEL, approvers=[ALICE])
        )
        waiting = asyncio.create_task(client.wait(request.id))
        await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
        answer = await asyncio.wait_for(waiting, 10)
        assert answer.approved and answer.decided_by == ALICE
        quiet = await client.create(
            signoff.NewRequest(title="Rotate", channel=CHANNEL, approvers=[ALICE], reminders=None)
        )
        stored = await jobs.bot.services.storage.queries.get(request_record_id(quiet.id))
        assert stored is not None and stored.policy.reminders == ()  # None: no reminders
        done = await client.report_outcome(request.id, exit_status=0, duration_seconds=1.5)
        assert done.status == "approved"
        with pytest.raises(signoff.RequestRefused):
            await client.report_outcome(request.id, exit_status=0, duration_seconds=1.5)
        with pytest.raises(signoff.RequestRefused):
            await client.withdraw(request.id)
        other = await client.create(
            signoff.NewRequest(title="Rotate keys", channel=CHANNEL, approvers=[ALICE])
        )
        assert (await client.withdraw(other.id, reason="not needed")).status == "withdrawn"


async def test_a_token_read_from_a_file_with_its_newline_is_taken(jobs: Jobs) -> None:
    """A secret mounted as a file ends in a newline, which no HTTP header may carry."""
    request = signoff.NewRequest(title="Rotate keys", channel=CHANNEL, approvers=[ALICE])
    async with signoff.Client(jobs.base, jobs.token + "\n") as client:
        made = await client.create(request)
    assert made.status == "pending" and made.requested_by == "nightly-cleanup"


async def test_what_a_request_asked_is_kept_as_long_as_its_escalations_may_wait(
    jobs: Jobs,
) -> None:
    month = 30 * 86400
    status, made = await jobs.ask(
        expires_in=60,
        on_expiry="escalate",
        escalate_to=[CAROL],
        escalate_expires_in=month,
        ladder=[{"approvers": [ALICE], "expires_in": month}],
    )
    assert status == 201, made
    storage = jobs.bot.services.storage
    kept_ms = await storage.client.raw.pttl(storage.keys.request(made["id"]))
    assert kept_ms > (60 + 2 * month) * 1000  # past the last step's expiry, not the first's


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


async def test_a_withdrawal_after_some_items_were_decided_is_answered_409_with_them(
    jobs: Jobs,
) -> None:
    """One of three items was approved (in another process) before the job withdraws:
    the rest are withdrawn, and the job is told the request is approved, with each item."""
    status, made = await jobs.ask(items=["vol-1", "vol-2", "vol-3"])
    assert status == 201, made
    storage = jobs.bot.services.storage
    lead = await storage.queries.get(request_record_id(made["id"]))
    assert lead is not None
    first = (await storage.queries.batch(lead))[0]
    decided = await storage.interrupts.decide(
        first.id, ALICE, Decision.approve(), args_digest=first.args_digest, now=jobs.bot.clock.now()
    )
    assert decided.status == "recorded"
    code, body = await jobs.post(made["status_url"] + "/withdraw", {"reason": "x"})
    assert code == 409 and body["status"] == "approved", body
    assert "some of its items were decided first" in body["error"]
    assert [i["status"] for i in body["items"]] == ["approved", "withdrawn", "withdrawn"]


async def test_every_log_line_about_a_request_carries_its_ids(jobs: Jobs) -> None:
    stream, root = io.StringIO(), logging.getLogger()
    kept = root.handlers[:], root.level
    configure_logging({"SIGNOFF_LOG_FORMAT": "json"}, stream)
    try:
        status, made = await jobs.ask()
        assert status == 201, made
        status, _ = await jobs.post(made["status_url"] + "/withdraw", {"reason": "not now"})
        assert status == 200
    finally:
        root.handlers, root.level = kept
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    about = [
        line for line in lines if made["id"] in line["event"] and line["logger"] != "aiohttp.access"
    ]
    assert len(about) >= 3, lines  # stored, posted, withdrawn
    assert all(line.get("run_id") == made["id"] for line in about), about
    assert all(line.get("record_id", "").startswith(made["id"]) for line in about), about


async def test_a_client_on_a_host_whose_clock_is_wrong_keeps_time_by_the_servers(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's expiry is the server's time: a gate on a host an hour fast would give up
    waiting 50 minutes early, with the card still live."""
    monkeypatch.setattr(client_module, "time", SimpleNamespace(time=lambda: time.time() + 3600))
    async with signoff.Client(jobs.base, jobs.token) as client:
        assert client.server_time() - time.time() > 3590  # nothing heard from the server yet
        await client.create(
            signoff.NewRequest(title="Delete 42 stale volumes", channel=CHANNEL, approvers=[ALICE])
        )
        assert abs(client.server_time() - time.time()) < 2  # its Date header is to the second
