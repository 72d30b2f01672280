"""Asking again through the requests API: only for an approved request that showed what it
acts on, once, in the approved card's thread."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, CHANNEL
from requests_jobs import Jobs

from bot.api.openapi import OPENAPI_PATH
from bot.api.request_records import REQUESTS_PATH
from bot.api.schemas import NewRequest, RequestView
from bot.ui import ids
from signoff.client import Client
from storage.errors import DuplicateInterruptError, StorageUnavailableError
from storage.requests import request_record_id


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


async def _approved_with_acts_on(jobs: Jobs) -> dict[str, Any]:
    _, checked = await jobs.ask(acts_on="vol-a\nvol-b\n", idempotency_key="checked")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    _, seen = await asyncio.wait_for(jobs.get(checked["status_url"] + "?wait=10"), 15)
    assert seen["status"] == "approved", seen
    return checked


async def _left_as_it_was(jobs: Jobs, checked: dict[str, Any]) -> None:
    """The approved request is approved, not asked again (audited so), and can be."""
    storage = jobs.bot.services.storage
    earlier = await storage.queries.get(request_record_id(checked["id"]))
    assert earlier is not None and earlier.state == "approved", earlier
    assert earlier.superseded_by is None, earlier.superseded_by
    entries = [e.event for e in await storage.audit.read(count=100) if e.run_id == checked["id"]]
    assert entries[-1] == "ask_again_refused", entries
    status, again = await jobs.ask(supersedes=checked["id"], acts_on="vol-z\n")
    assert status == 201, again


async def test_asking_again_under_a_key_whose_request_is_gone_leaves_the_approval(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request that asked again under a key ends its retention as the key is sent
    again: the 409 leaves the approved request as it was, not asked again by nothing."""
    checked = await _approved_with_acts_on(jobs)
    asking_again = {"supersedes": checked["id"], "acts_on": "vol-a\n", "idempotency_key": "k"}
    status, made = await jobs.ask(**asking_again)
    assert status == 201, made
    storage = jobs.bot.services.storage
    create = storage.interrupts.create_interrupts

    async def gone_meanwhile(*args: Any, **kwargs: Any) -> None:
        try:
            await create(*args, **kwargs)
        except DuplicateInterruptError:
            await storage.client.raw.delete(storage.keys.record(request_record_id(made["id"])))
            raise

    monkeypatch.setattr(storage.interrupts, "create_interrupts", gone_meanwhile)
    status, refused = await jobs.ask(**asking_again)
    assert status == 409 and "now gone" in refused["error"], refused
    monkeypatch.undo()
    await _left_as_it_was(jobs, checked)


async def test_asking_again_when_storage_fails_to_make_it_leaves_the_approval(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing the request asking again fails (a 503, nothing made): the approved request
    is not left marked as asked again."""
    checked = await _approved_with_acts_on(jobs)
    storage = jobs.bot.services.storage

    async def failing(*_: Any, **__: Any) -> None:
        raise StorageUnavailableError("Redis went away")

    monkeypatch.setattr(storage.interrupts, "create_interrupts", failing)
    status, refused = await jobs.ask(supersedes=checked["id"], acts_on="vol-a\n")
    assert status == 503, refused
    monkeypatch.undo()
    await _left_as_it_was(jobs, checked)


async def test_asking_again_while_another_is_being_made_is_retried_by_the_client(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another request asking again for the same approval is being made (it may yet fail,
    and the mark be undone): the 503 with Retry-After has the client (the gate's) ask
    again, not give up; once that one failed, its retry makes the request."""
    checked = await _approved_with_acts_on(jobs)
    storage = jobs.bot.services.storage
    told: list[Exception] = []
    refused = asyncio.Event()
    client = Client(jobs.base, jobs.token)
    once = client._once

    async def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return await once(*args, **kwargs)
        except Exception as exc:
            told.append(exc)
            refused.set()
            raise

    monkeypatch.setattr(client, "_once", watched)
    second = NewRequest(
        title="Delete 42 stale volumes",
        channel=CHANNEL,
        approvers=[ALICE],
        acts_on="vol-a\n",
        supersedes=checked["id"],
        idempotency_key="gate-2",
    )
    asking: list[asyncio.Task[RequestView]] = []

    async def failing_after_another_asked(*_: Any, **__: Any) -> None:
        asking.append(asyncio.create_task(client.create(second)))
        await asyncio.wait_for(refused.wait(), 10)
        raise StorageUnavailableError("Redis went away")

    monkeypatch.setattr(storage.interrupts, "create_interrupts", failing_after_another_asked)
    status, failed = await jobs.ask(supersedes=checked["id"], acts_on="vol-b\n")
    assert status == 503, failed
    monkeypatch.undo()
    assert "503: supersedes: request" in str(told[0]), told
    assert "being asked again by another request; try again" in str(told[0]), told

    made = await asyncio.wait_for(asking[0], 15)
    await client.close()
    assert made.status == "pending" and made.acts_on == "vol-a\n", made
    earlier = await storage.queries.get(request_record_id(checked["id"]))
    assert earlier is not None and earlier.superseded_by == request_record_id(made.id)


async def test_a_mark_left_by_a_request_never_made_is_taken_over_after_a_minute(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing the request asking again fails, and so does undoing its mark: the approved
    request stays marked by a request that does not exist. Within the minute another is
    told to retry (it may yet be made); after it, the next request asking again is made."""
    checked = await _approved_with_acts_on(jobs)
    storage = jobs.bot.services.storage

    async def failing(*_: Any, **__: Any) -> None:
        raise StorageUnavailableError("Redis went away")

    monkeypatch.setattr(storage.interrupts, "create_interrupts", failing)
    monkeypatch.setattr(storage.interrupts, "unsupersede", failing)
    status, refused = await jobs.ask(supersedes=checked["id"], acts_on="vol-a\n")
    assert status == 503, refused
    monkeypatch.undo()
    earlier = await storage.queries.get(request_record_id(checked["id"]))
    assert earlier is not None and earlier.superseded_by is not None
    stale = earlier.superseded_by
    assert await storage.queries.get(stale) is None

    jobs.bot.clock.advance(timedelta(seconds=59))
    status, body = await jobs.ask(supersedes=checked["id"], acts_on="vol-b\n")
    assert status == 503 and "try again" in body["error"], body
    jobs.bot.clock.advance(timedelta(seconds=2))
    status, made = await jobs.ask(supersedes=checked["id"], acts_on="vol-b\n")
    assert status == 201, made
    earlier = await storage.queries.get(request_record_id(checked["id"]))
    assert earlier is not None and earlier.superseded_by == request_record_id(made["id"])
    trail = [e for e in await storage.audit.read(count=100) if e.run_id == checked["id"]]
    assert [(e.event, e.detail) for e in trail[-2:]] == [
        ("ask_again_refused", stale),
        ("changed", request_record_id(made["id"])),
    ], trail
    status, body = await jobs.ask(supersedes=checked["id"], acts_on="vol-c\n")
    assert status == 409 and "asked again already" in body["error"], body
