"""Each API client holds at most ``SIGNOFF_API_OPEN_CALLS`` long-polls open in a process:
one more is refused with a 429 before any work, the polls already open go on, and a
poll's slot is freed however it ends. Served as ``signoff serve`` serves it (a handler
is not cancelled when its client goes away), over real HTTP and real Redis."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from harness import ALICE, CHANNEL
from requests_jobs import Jobs

from bot.api.open_calls import OPEN_CALLS, OpenCalls
from bot.services.limits import ApiLimits
from bot.ui import ids
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
