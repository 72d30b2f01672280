"""The Python client against a real Signoff server: it asks, waits, reports, and keeps
time by the server's clock."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from harness import ALICE, CHANNEL
from requests_jobs import Jobs

import signoff
import signoff.client as client_module
from bot.ui import ids
from signoff import gate
from signoff.gate_cli import UNREACHABLE
from storage.requests import request_record_id


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
        again = await client.report_outcome(request.id, exit_status=0, duration_seconds=1.5)
        assert again.status == "approved"  # the same report: taken once
        with pytest.raises(signoff.RequestRefused):
            await client.report_outcome(request.id, exit_status=1, duration_seconds=1.5)
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


@pytest.mark.parametrize("moved", [301, 308])
async def test_an_address_that_redirects_is_named_with_the_one_to_give_and_asks_nothing(
    jobs: Jobs, moved: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGNOFF_URL is an http:// address whose proxy redirects to Signoff's https:// one (here
    another port): followed, the token would be dropped (a 401 telling the job to send one)
    or a POST sent as a GET (a 405); the job is told which address to give instead."""

    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=moved, headers={"Location": jobs.base + request.path_qs})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", redirect)
    front = TestServer(app, host="127.0.0.1", port=0)
    await front.start_server()
    url = f"http://127.0.0.1:{front.port}"
    request = signoff.NewRequest(
        title="Rotate keys", channel=CHANNEL, approvers=[ALICE], idempotency_key="k-1"
    )
    try:
        async with signoff.Client(url, jobs.token) as client:
            with pytest.raises(signoff.SignoffError) as failed:
                await client.create(request)
        code = await asyncio.wait_for(gate._gate(signoff.Client(url, jobs.token), request, []), 10)
    finally:
        await front.close()
    assert str(failed.value) == (
        f"{moved} from {url}: it redirects to {jobs.base}/api/requests; give Signoff's "
        f"address as {jobs.base} (the client follows no redirect, so the token goes only to "
        "the address given)"
    )
    assert (
        code == UNREACHABLE and f"give Signoff's address as {jobs.base}" in capsys.readouterr().err
    )
    assert jobs.bot.slack.called("chat.postMessage") == []
