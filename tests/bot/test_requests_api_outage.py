"""Redis fails under the requests API as a request is being made: the answer tells what
was made, and nothing is made twice."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from requests_jobs import Jobs

from bot.api.request_records import REQUESTS_PATH
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import EmbeddedRedis, Storage
from storage.sweeps import POST_LEASE


@pytest.fixture
def storage(own_storage: Storage) -> Storage:
    """The bot's storage is on this module's own Redis, which its tests stop and start again."""
    return own_storage


@pytest.fixture
def retries() -> int:
    """One: enough to reconnect once Redis is back, without 1.2 s of retries for each step."""
    return 1


async def test_a_call_while_redis_is_down_is_a_503_saying_nothing_was_changed(
    jobs: Jobs, server: EmbeddedRedis
) -> None:
    server.stop()
    status, refused = await jobs.ask()
    assert status == 503 and "nothing was changed" in refused["error"]
    assert jobs.bot.slack.called("chat.postMessage") == []
    server.start()
    status, made = await jobs.ask()
    assert status == 201, made


@pytest.mark.parametrize("key", [None, "nightly-2026-11-24"])
async def test_a_request_made_as_redis_stops_is_answered_with_its_id_not_as_nothing_made(
    jobs: Jobs, server: EmbeddedRedis, key: str | None
) -> None:
    """Slack took the card, then Redis stopped before it was recorded: the 503 names the
    request made, which is found there once Redis is back, with its one card."""
    bot = jobs.bot
    fields = {} if key is None else {"idempotency_key": key}
    bot.slack.after["chat.postMessage"] = server.stop
    status, refused = await jobs.ask(**fields)
    assert status == 503, refused
    assert "nothing was changed" not in refused["error"], refused
    [made] = [w for w in refused["error"].split() if w.startswith("req_")]
    made = made.rstrip(",;:.")
    assert f"{REQUESTS_PATH}/{made}" in refused["error"], refused

    server.start()
    bot.slack.after.clear()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    status, found = await jobs.get(f"{REQUESTS_PATH}/{made}")
    assert status == 200 and found["status"] == "pending"
    if key is not None:  # the job asks again under its key: the same request
        status, again = await jobs.ask(**fields)
        assert status == 200 and again["id"] == made
    assert len(bot.slack.called("chat.postMessage")) == 1


async def test_a_request_withdrawn_as_redis_stops_is_answered_so_and_its_card_says_so(
    jobs: Jobs, server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis stops just after the withdrawal landed: the 503 says it was withdrawn, and the
    job's retry (a 409: it is no longer pending) redraws the card, which still showed
    Approve and Deny."""
    interrupts = jobs.bot.services.storage.interrupts
    cancel = interrupts.cancel_run

    async def cancel_then_stop(*args: Any, **kwargs: Any) -> Any:
        cancelled = await cancel(*args, **kwargs)
        server.stop()
        return cancelled

    _, made = await jobs.ask()
    withdraw = f"{made['status_url']}/withdraw"
    monkeypatch.setattr(interrupts, "cancel_run", cancel_then_stop)
    status, refused = await jobs.post(withdraw)
    assert status == 503, refused
    assert f"request {made['id']} was withdrawn" in refused["error"], refused
    monkeypatch.undo()
    server.start()
    status, again = await jobs.post(withdraw)
    assert (status, again["status"]) == (409, "withdrawn"), again
    shown = str(jobs.bot.slack.called("chat.update")[-1])
    assert "Withdrawn" in shown and ids.APPROVE not in shown, shown
