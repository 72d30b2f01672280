"""The requests API refuses bad input with a 400 naming the field, tells likely mistakes what to
give instead, and refuses a token that cannot be one."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from harness import ALICE, BOB, CHANNEL
from pydantic import BaseModel, ValidationError
from requests_jobs import ADMIN_TOKEN, Jobs

from bot.api.bodies import MAX_BODY
from bot.api.request_records import REQUESTS_PATH
from bot.api.runs import StartRun
from bot.api.schemas import NewRequest, OutcomeReport, Withdrawal
from storage.errors import DuplicateInterruptError
from storage.requests import request_record_id


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
        # A control character in the host: no address can be checked, nor connected to.
        ({"callback_url": "https://hooks\u0000.example.com/hook"}, "callback_url"),
        ({"callback_url": "https://hooks.exa\nmple.com/hook"}, "callback_url"),
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
        (
            {"params": [{"name": "max-age", "type": "integer", "value": 3}]},
            "params.0.name: a param's name is up to 64 letters, digits and underscores, not "
            "starting with a digit: the job reads it as SIGNOFF_PARAM_<NAME>",
        ),
        (
            {"idempotency_key": "cleanup 2026-11-27T03:00:00+00:00"},
            "idempotency_key: use up to 128 letters, digits and _ . : - (no spaces or other signs)",
        ),
        (
            {"acts_on": "vol-1", "supersedes": "42"},
            "supersedes: use the id of the approved request this one asks again for (req_...)",
        ),
    ],
)
async def test_likely_mistakes_are_told_what_to_give_instead(
    jobs: Jobs, fields: dict[str, Any], said: str
) -> None:
    status, refused = await jobs.ask(**fields)
    assert (status, refused["error"]) == (400, said)
    assert jobs.bot.slack.called("chat.postMessage") == []


async def test_an_unknown_approver_is_refused_without_a_log_of_a_zone_assumed(
    jobs: Jobs, caplog: pytest.LogCaptureFixture
) -> None:
    """The refusal names the user Slack does not know; no log line claims the bot went on
    with that user on UTC."""
    caplog.set_level(logging.DEBUG)
    status, refused = await jobs.ask(approvers=["U0NOBODY"])
    assert status == 400 and "U0NOBODY" in refused["error"]
    told = [r.getMessage() for r in caplog.records if r.name.startswith("bot.")]
    assert [m for m in told if "U0NOBODY" in m] == []


async def test_a_deactivated_approver_is_refused_as_one_who_cannot_decide(jobs: Jobs) -> None:
    """Slack keeps a deactivated account (``users.info`` answers it, ``deleted``), but it
    decides nothing: a request waiting on it could wait for nobody."""
    jobs.bot.slack.add_user("U0GONE", deleted=True)
    for approvers in ([ALICE, "U0GONE"], ["U0GONE"]):
        status, refused = await jobs.ask(approvers=approvers)
        at = f"approvers.{len(approvers) - 1}"
        said = f"{at}: U0GONE is deactivated in Slack, so cannot decide; name someone who can"
        assert (status, refused["error"]) == (400, said)
    assert jobs.bot.slack.called("chat.postMessage") == []


async def test_a_key_whose_request_is_gone_is_told_to_use_another(jobs: Jobs) -> None:
    """The request a key was used for ends its retention as the same key is sent again:
    the 409 tells the job what to do, not only what happened."""
    _, made = await jobs.ask(idempotency_key="nightly-2026-11-24")
    storage = jobs.bot.services.storage
    create = storage.interrupts.create_interrupts

    async def gone_meanwhile(*args: Any, **kwargs: Any) -> None:
        try:
            await create(*args, **kwargs)
        except DuplicateInterruptError:
            await storage.client.raw.delete(storage.keys.record(request_record_id(made["id"])))
            raise

    storage.interrupts.create_interrupts = gone_meanwhile  # type: ignore[method-assign]
    status, refused = await jobs.ask(idempotency_key="nightly-2026-11-24")
    assert (status, refused["field"]) == (409, "idempotency_key"), refused
    assert refused["error"] == (
        "this idempotency key was used for a request now gone; use another key"
    )


async def test_unknown_requests_and_bad_waits_are_clear_errors(jobs: Jobs) -> None:
    status, body = await jobs.get(f"{REQUESTS_PATH}/req_{'0' * 32}")
    assert status == 404 and body["field"] == "id"
    status, body = await jobs.get(f"{REQUESTS_PATH}/run_1%2Fask")
    assert status == 404 and body["field"] == "id"
    _, made = await jobs.ask()
    for wait in ("forever", "301", "-1"):  # at most 300 seconds
        status, body = await jobs.get(made["status_url"] + f"?wait={wait}")
        assert status == 400 and body["field"] == "wait", wait
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


async def test_a_body_too_large_is_a_json_413_on_every_api_and_nothing_is_posted(
    jobs: Jobs,
) -> None:
    """A job's client reads the error (not "not the Signoff API"), sent whole or chunked."""
    too_large = json.dumps({"title": "t", "details": "x" * (MAX_BODY + 1)}).encode()

    async def chunked() -> AsyncIterator[bytes]:
        for start in range(0, len(too_large), 65536):
            yield too_large[start : start + 65536]

    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    _, made = await jobs.ask()
    posted = len(jobs.bot.slack.called("chat.postMessage"))
    calls = [
        (REQUESTS_PATH, jobs.auth),
        (made["status_url"] + "/withdraw", jobs.auth),
        (made["status_url"] + "/outcome", jobs.auth),
        ("/api/runs", admin),
        ("/agui/cleanup", admin),
    ]
    for path, auth in calls:
        for body in (too_large, chunked()):
            async with jobs.http.post(jobs.base + path, data=body, headers=auth) as r:
                answer = await r.json()  # refuses any content type but JSON
                assert r.status == 413, (path, answer)
                assert (
                    answer["error"] == f"the body is larger than the {MAX_BODY} bytes Signoff takes"
                )
    assert len(jobs.bot.slack.called("chat.postMessage")) == posted
    status, after = await jobs.get(made["status_url"])
    assert (status, after["status"]) == (200, "pending")


UNKNOWN = {f"k{i}": 1 for i in range(20000)}
"""Far more keys than any body names, none of them known."""
ASKED = {"title": "t", "channel": CHANNEL, "approvers": [ALICE]}
PARAM = {"name": "n", "value": "v"}
LADDER_STEP = {"approvers": [ALICE]}
DONE = {"exit_status": 0, "duration_seconds": 1}


@pytest.mark.parametrize(
    ("model", "body", "where"),
    [
        (NewRequest, {**ASKED, **UNKNOWN}, ("k0",)),
        (NewRequest, {**ASKED, "reminders": UNKNOWN}, ("reminders", "k0")),
        (NewRequest, {**ASKED, "params": [{**PARAM, **UNKNOWN}]}, ("params", 0, "k0")),
        (
            NewRequest,
            {
                **ASKED,
                "on_expiry": "escalate",
                "escalate_to": ["U0BOB"],
                "ladder": [{**LADDER_STEP, **UNKNOWN}],
            },
            ("ladder", 0, "k0"),
        ),
        (Withdrawal, UNKNOWN, ("k0",)),
        (OutcomeReport, {**DONE, **UNKNOWN}, ("k0",)),
        (StartRun, {"agent": "cleanup", "input": "go", **UNKNOWN}, ("k0",)),
    ],
)
def test_a_body_of_unknown_keys_is_one_error_naming_the_first(
    model: type[BaseModel], body: dict[str, Any], where: tuple[str | int, ...]
) -> None:
    """Not an error each, which took the bot's loop half a second a request to build."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate_json(json.dumps(body))
    assert refused.value.error_count() == 1
    (error,) = refused.value.errors()
    assert (error["loc"], error["type"]) == (where, "extra_forbidden")


async def test_unknown_keys_are_a_400_naming_the_first_on_every_api(jobs: Jobs) -> None:
    _, made = await jobs.ask()
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    calls = [
        (REQUESTS_PATH, {**ASKED, "reminders": UNKNOWN}, jobs.auth, "reminders.k0"),
        (made["status_url"] + "/withdraw", UNKNOWN, jobs.auth, "k0"),
        (made["status_url"] + "/outcome", {**DONE, **UNKNOWN}, jobs.auth, "k0"),
        ("/api/runs", {"agent": "cleanup", "input": "go", **UNKNOWN}, admin, "k0"),
    ]
    posted = len(jobs.bot.slack.called("chat.postMessage"))
    for path, body, auth, where in calls:
        status, answer = await jobs.post(path, body, headers=auth)
        assert status == 400, (path, answer)
        assert answer["error"] == f"{where}: Extra inputs are not permitted", answer
    assert len(jobs.bot.slack.called("chat.postMessage")) == posted
    status, after = await jobs.get(made["status_url"])
    assert (status, after["status"]) == (200, "pending")


async def test_a_handle_no_group_has_is_refused_saying_how_to_name_a_person(jobs: Jobs) -> None:
    """``@alice`` reads as a person to whoever typed it: the refusal says people are named
    by user id, not only that no group has that handle."""
    jobs.bot.slack.groups["S0ONCALL"] = [ALICE, BOB]
    jobs.bot.slack.handles["S0ONCALL"] = "oncall"
    status, refused = await jobs.ask(approvers=[ALICE, "@alice"])
    assert (status, refused["field"]) == (400, "approvers.1"), refused
    assert refused["error"] == (
        "approvers.1: no user group @alice that Signoff can see (usergroups:read); "
        "name a person by user id (U0123ABCD, in their Slack profile under More)"
    )
    assert jobs.bot.slack.called("chat.postMessage") == []
