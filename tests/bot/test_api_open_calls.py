"""Each API client holds at most ``SIGNOFF_API_OPEN_CALLS`` calls open in a process
(long-polls; for the admin client also AG-UI streams and runs API starts): one more is
refused with a 429 before any work, those already open go on, and a call's slot is
freed however it ends. Served as ``signoff serve`` serves it (a handler
is not cancelled when its client goes away), over real HTTP and real Redis."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from harness import ALICE, CHANNEL
from requests_jobs import ADMIN_TOKEN, Jobs

import signoff
from agent_runtime.agui.events import run_error, run_started
from bot.api import agui, runs
from bot.api.agui import AGUI_PATH
from bot.api.open_calls import OPEN_CALLS, OpenCalls
from bot.api.runs import RUNS_PATH
from bot.services.limits import ApiLimits
from bot.ui import ids
from storage.api_clients import ADMIN
from storage.audit import AuditEntry
from storage.errors import StorageUnavailableError

CAP = 2


@dataclasses.dataclass
class Capped(Jobs):
    """The requests API with a cap of ``CAP`` open calls per client."""

    open_calls: OpenCalls = dataclasses.field(default_factory=lambda: OpenCalls(CAP))

    async def until_held(self, count: int, client: str = "nightly-cleanup") -> None:
        """Wait (5 s at most) until ``client`` holds ``count`` calls open."""
        deadline = time.monotonic() + 5
        while self.open_calls.held(client) != count:
            held = self.open_calls.held(client)
            assert time.monotonic() < deadline, f"{client} holds {held} calls, not {count}"
            await asyncio.sleep(0.01)

    def poll(self, url: str, seconds: float = 30) -> asyncio.Task[tuple[int, dict[str, Any]]]:
        return asyncio.create_task(self.get(f"{url}?wait={seconds}"))


@pytest.fixture
async def capped(
    limited_jobs: Callable[[ApiLimits], Awaitable[tuple[Jobs, web.Application]]],
) -> Capped:
    jobs, app = await limited_jobs(ApiLimits(open_calls=CAP))
    return Capped(**vars(jobs), open_calls=app[OPEN_CALLS])


async def test_a_long_poll_over_the_cap_is_refused_and_those_open_go_on(capped: Capped) -> None:
    _, made = await capped.ask()
    url = made["status_url"]
    polls = [capped.poll(url) for _ in range(CAP)]
    await capped.until_held(CAP)

    async with capped.http.get(f"{capped.base}{url}?wait=30", headers=capped.auth) as refused:
        assert refused.status == 429
        assert refused.headers["Retry-After"] == "5"
        body = await refused.json()
    assert body["limit"] == CAP and body["setting"] == "SIGNOFF_API_OPEN_CALLS"
    assert "SIGNOFF_API_OPEN_CALLS" in body["error"] and f"holds {CAP} calls" in body["error"]
    # A status without a wait holds nothing open: it is answered as ever.
    status, now = await capped.get(url)
    assert status == 200 and now["status"] == "pending"
    # Another client has slots of its own.
    other = await capped.as_client("backup-job", (CHANNEL,))
    _, theirs = await other.ask()
    status, _ = await other.get(theirs["status_url"] + "?wait=0")
    assert status == 200

    assert not any(poll.done() for poll in polls)
    await capped.bot.click(ids.APPROVE, capped.value(0), user=ALICE)
    for status, answer in await asyncio.wait_for(asyncio.gather(*polls), 10):
        assert status == 200 and answer["status"] == "approved"
    await capped.until_held(0)


async def test_a_slot_is_freed_when_the_request_is_answered(capped: Capped) -> None:
    _, made = await capped.ask()
    polls = [capped.poll(made["status_url"]) for _ in range(CAP)]
    await capped.until_held(CAP)
    await capped.bot.click(ids.APPROVE, capped.value(), user=ALICE)
    await asyncio.wait_for(asyncio.gather(*polls), 10)
    await capped.until_held(0)
    status, _ = await capped.get(made["status_url"] + "?wait=1")
    assert status == 200


async def test_a_slot_is_freed_when_the_wait_is_over(capped: Capped) -> None:
    _, made = await capped.ask()
    for _ in range(CAP + 1):  # one after the other: each frees its slot as it answers
        status, answer = await capped.get(made["status_url"] + "?wait=0.1")
        assert status == 200 and answer["status"] == "pending"
    assert capped.open_calls.held("nightly-cleanup") == 0


async def test_a_slot_is_freed_when_the_client_goes_away(capped: Capped) -> None:
    _, made = await capped.ask()
    async with aiohttp.ClientSession() as leaving:
        polls = [
            asyncio.create_task(
                leaving.get(f"{capped.base}{made['status_url']}?wait=300", headers=capped.auth)
            )
            for _ in range(CAP)
        ]
        await capped.until_held(CAP)
        for poll in polls:
            poll.cancel()
    # The server still waits out nothing: both polls end within a liveness check or two.
    await capped.until_held(0)
    status, answer = await capped.get(made["status_url"] + "?wait=0.1")
    assert status == 200 and answer["status"] == "pending"


async def test_a_slot_is_freed_when_the_poll_fails(
    capped: Capped, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, made = await capped.ask()
    poll = capped.poll(made["status_url"])
    await capped.until_held(1)
    storage = capped.bot.services.storage

    async def redis_down(_: str) -> None:
        raise StorageUnavailableError("Redis is down")

    monkeypatch.setattr(storage.queries, "get", redis_down)
    record = await capped.bot.services.storage.audit.append(
        AuditEntry(
            event="note",
            record_id=made["id"] + "/ask",
            run_id=made["id"],
            at=datetime.now(UTC),
            user_id="nightly-cleanup",
            channel=CHANNEL,
        )
    )
    assert record
    status, body = await asyncio.wait_for(poll, 10)
    assert status == 503, body
    await capped.until_held(0)


def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


async def test_agui_runs_and_runs_api_starts_past_the_admins_cap_are_refused(
    capped: Capped,
) -> None:
    admin = dataclasses.replace(capped, token=ADMIN_TOKEN)
    _, made = await capped.ask()
    polls = [admin.poll(made["status_url"]) for _ in range(CAP)]
    await capped.until_held(CAP, ADMIN)
    posted = len(capped.bot.slack.called("chat.postMessage"))

    body = {"threadId": "t-capped", "runId": "r1", "messages": []}
    async with capped.http.post(
        f"{capped.base}{AGUI_PATH}/cleanup", json=body, headers=admin_headers()
    ) as refused:
        assert refused.status == 429 and refused.headers["Retry-After"] == "5"
        answer = await refused.json()
    assert answer["limit"] == CAP and answer["setting"] == "SIGNOFF_API_OPEN_CALLS"
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    status, answer = await admin.post(RUNS_PATH, start)
    assert status == 429 and answer["setting"] == "SIGNOFF_API_OPEN_CALLS"
    assert len(capped.bot.slack.called("chat.postMessage")) == posted  # nothing started
    # What answers at once holds nothing open: asked as ever.
    async with capped.http.get(
        f"{capped.base}{AGUI_PATH}/cleanup", headers=admin_headers()
    ) as told:
        assert told.status == 200
    # A named client's slots are its own.
    status, _ = await capped.get(made["status_url"] + "?wait=0")
    assert status == 200

    await capped.bot.click(ids.APPROVE, capped.value(0), user=ALICE)
    await asyncio.wait_for(asyncio.gather(*polls), 10)
    await capped.until_held(0, ADMIN)


async def test_an_agui_stream_holds_a_slot_until_its_run_ends_its_app_gone_or_not(
    capped: Capped, monkeypatch: pytest.MonkeyPatch
) -> None:
    ends = asyncio.Event()

    async def run_until_told(*_: Any, **__: Any) -> AsyncIterator[dict[str, Any]]:
        yield run_started(thread_id="t-held", run_id="r1")
        await ends.wait()
        yield run_error("stopped by the test", code="STOPPED")

    monkeypatch.setattr(agui, "run_agui", run_until_told)
    body = {"threadId": "t-held", "runId": "r1", "messages": []}
    async with aiohttp.ClientSession() as app:
        response = await app.post(
            f"{capped.base}{AGUI_PATH}/cleanup", json=body, headers=admin_headers()
        )
        assert response.status == 200
        assert b"RUN_STARTED" in await response.content.readline()
        assert capped.open_calls.held(ADMIN) == 1
        response.close()  # the app goes away; its run goes on
    ends.set()
    await capped.until_held(0, ADMIN)


async def test_a_runs_api_start_holds_a_slot_while_its_run_goes_on(
    capped: Capped, monkeypatch: pytest.MonkeyPatch
) -> None:
    ends = asyncio.Event()

    async def run_until_told(*_: Any, **__: Any) -> None:
        await ends.wait()
        raise RuntimeError("the agent failed")

    monkeypatch.setattr(runs, "start_run", run_until_told)
    admin = dataclasses.replace(capped, token=ADMIN_TOKEN)
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    started = asyncio.create_task(admin.post(RUNS_PATH, start))
    await capped.until_held(1, ADMIN)
    ends.set()
    status, answer = await asyncio.wait_for(started, 10)
    assert status == 500 and "failed" in answer["error"]
    await capped.until_held(0, ADMIN)


async def test_a_client_waiting_through_a_full_cap_asks_again_after_retry_after(
    capped: Capped, caplog: pytest.LogCaptureFixture
) -> None:
    _, held = await capped.ask()
    _, waited = await capped.ask()
    polls = [capped.poll(held["status_url"]) for _ in range(CAP)]
    await capped.until_held(CAP)
    await capped.bot.click(
        ids.APPROVE, capped.value(1), user=ALICE, message_ts=capped.bot.message_ts(1)
    )

    caplog.set_level(logging.INFO, logger="signoff.client")
    async with signoff.Client(capped.base, capped.token) as client:
        waiting = asyncio.create_task(client.wait(waited["id"], within=60))
        deadline = time.monotonic() + 5
        while "Signoff is busy" not in caplog.text:  # refused at once: every slot is held
            assert time.monotonic() < deadline and not waiting.done()
            await asyncio.sleep(0.01)
        await capped.bot.click(ids.APPROVE, capped.value(0), user=ALICE)
        await asyncio.wait_for(asyncio.gather(*polls), 10)
        answer = await asyncio.wait_for(waiting, 10)
    assert answer.status == "approved"
