"""Each API client may have at most ``SIGNOFF_API_PENDING_REQUESTS`` requests pending: one
more is refused with a 429 naming the limit, with nothing stored and no card posted; a
request decided or withdrawn makes room; a retry of a request already made is answered
as ever. Over real HTTP, real Redis and the fake Slack."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from harness import ALICE, CHANNEL
from requests_jobs import Jobs

import signoff
from bot.services.limits import ApiLimits
from bot.ui import ids
from signoff import gate
from signoff.gate_cli import REFUSED
from storage.requests import request_record_id

LIMIT = 3
Start = Callable[[ApiLimits], Awaitable[tuple[Jobs, web.Application]]]


@pytest.fixture
async def limited(limited_jobs: Start) -> Jobs:
    jobs, _ = await limited_jobs(ApiLimits(pending_requests=LIMIT))
    return jobs


async def stored_requests(jobs: Jobs) -> int:
    """How many requests Redis keeps what was asked of (their ``RequestMeta``)."""
    storage = jobs.bot.services.storage
    found = storage.client.raw.scan_iter(match=f"{storage.keys.prefix}:*:request")
    return len([key async for key in found])


async def test_a_request_past_the_limit_is_refused_with_nothing_stored_or_posted(
    limited: Jobs,
) -> None:
    for n in range(LIMIT):
        status, _ = await limited.ask(idempotency_key=f"run-{n}")
        assert status == 201
    posted = len(limited.bot.slack.called("chat.postMessage"))

    status, body = await limited.ask(idempotency_key="one-too-many")
    assert status == 429, body
    assert body["limit"] == LIMIT and body["setting"] == "SIGNOFF_API_PENDING_REQUESTS"
    assert f"has {LIMIT} requests pending" in body["error"]
    assert "SIGNOFF_API_PENDING_REQUESTS" in body["error"]
    assert len(limited.bot.slack.called("chat.postMessage")) == posted
    assert await stored_requests(limited) == LIMIT
    # A request with items counts once per item.
    status, _ = await limited.ask(items=["vol-1"])
    assert status == 429

    # The same request again (its key) is answered as it stands, not refused.
    status, again = await limited.ask(idempotency_key="run-0")
    assert status == 200 and again["status"] == "pending"
    # Another client has room of its own.
    other = await limited.as_client("backup-job", (again["channel"],))
    status, _ = await other.ask()
    assert status == 201


async def test_a_gate_of_a_client_at_its_limit_exits_refused_naming_the_limit(
    limited: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(LIMIT):
        status, _ = await limited.ask(idempotency_key=f"run-{n}")
        assert status == 201
    ran = tmp_path / "ran"
    request = signoff.NewRequest(title="Delete volumes", channel=CHANNEL, approvers=[ALICE])
    client = signoff.Client(limited.base, limited.token)
    assert await gate._gate(client, request, ["touch", str(ran)]) == REFUSED
    assert not ran.exists() and len(limited.bot.slack.called("chat.postMessage")) == LIMIT
    assert f"has {LIMIT} requests pending" in capsys.readouterr().err


async def test_a_decided_or_withdrawn_request_makes_room(limited: Jobs) -> None:
    made = [(await limited.ask())[1] for _ in range(LIMIT)]
    assert (await limited.ask())[0] == 429

    await limited.bot.click(ids.APPROVE, limited.value(0), user=ALICE)
    _, approved = await limited.get(made[0]["status_url"] + "?wait=10")
    assert approved["status"] == "approved"
    status, _ = await limited.ask()
    assert status == 201
    assert (await limited.ask())[0] == 429

    status, _ = await limited.post(made[1]["status_url"] + "/withdraw")
    assert status == 200
    status, _ = await limited.ask()
    assert status == 201


async def test_racing_requests_never_pass_the_limit(limited: Jobs) -> None:
    answers = await asyncio.gather(*(limited.ask() for _ in range(3 * LIMIT)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] * LIMIT + [429] * (2 * LIMIT)
    assert len(limited.bot.slack.called("chat.postMessage")) == LIMIT
    assert await stored_requests(limited) == LIMIT


async def test_asking_again_refused_at_the_limit_leaves_the_approved_request_as_it_was(
    limited_jobs: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another request takes the last room between the check and the store: the refused
    request asked again for an approved one, which stays approved, not asked again, and
    can be asked again once there is room."""
    jobs, _ = await limited_jobs(ApiLimits(pending_requests=2))
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n")
    await jobs.bot.click(ids.APPROVE, jobs.value(0), user=ALICE)
    _, approved = await jobs.get(checked["status_url"] + "?wait=10")
    assert approved["status"] == "approved"
    _, waiting = await jobs.ask()
    storage = jobs.bot.services.storage
    create = storage.interrupts.create_interrupts
    racing: list[int] = []

    async def another_first(*args: Any, **kw: Any) -> None:
        if not racing:  # the other request lands first, and takes the last room
            racing.append(0)
            racing[0], _ = await jobs.ask()
        await create(*args, **kw)

    monkeypatch.setattr(storage.interrupts, "create_interrupts", another_first)
    asking_again = {"supersedes": checked["id"], "acts_on": "vol-a\nvol-c\n"}
    status, body = await jobs.ask(**asking_again)
    assert racing == [201] and status == 429, body
    monkeypatch.undo()

    earlier = await storage.queries.get(request_record_id(checked["id"]))
    assert earlier is not None and earlier.state == "approved" and earlier.superseded_by is None
    cards = [u for u in jobs.bot.slack.called("chat.update") if u["ts"] == jobs.bot.message_ts(0)]
    assert not any("Changed since it was approved" in str(u["blocks"]) for u in cards)
    entries = [e.event for e in await storage.audit.read(count=100) if e.run_id == checked["id"]]
    assert entries[-2:] == ["changed", "ask_again_refused"], entries

    status, _ = await jobs.post(waiting["status_url"] + "/withdraw")
    assert status == 200
    status, again = await jobs.ask(**asking_again)
    assert status == 201, again
    marked = await storage.queries.get(request_record_id(checked["id"]))
    assert marked is not None and marked.superseded_by == request_record_id(again["id"])
