"""Redis fails under the requests API as a request is being made: the answer tells what
was made, and nothing is made twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from harness import ALICE, BOB, CHANNEL, Harness

from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app
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
    make_bot: Any, server: EmbeddedRedis
) -> None:
    bot: Harness = await make_bot()
    _, token = await bot.services.storage.api_clients.create("nightly", now=datetime.now(UTC))
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"title": "Rotate keys", "channel": CHANNEL, "approvers": [ALICE, BOB]}
    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{api.port}") as http:
            server.stop()
            async with http.post(REQUESTS_PATH, json=body, headers=headers) as r:
                assert r.status == 503 and "nothing was changed" in (await r.json())["error"]
            assert bot.slack.called("chat.postMessage") == []
            server.start()
            async with http.post(REQUESTS_PATH, json=body, headers=headers) as r:
                assert r.status == 201, await r.text()
    finally:
        await api.close()


@pytest.mark.parametrize("key", [None, "nightly-2026-11-24"])
async def test_a_request_made_as_redis_stops_is_answered_with_its_id_not_as_nothing_made(
    make_bot: Any, server: EmbeddedRedis, key: str | None
) -> None:
    """Slack took the card, then Redis stopped before it was recorded: the 503 names the
    request made, which is found there once Redis is back, with its one card."""
    bot: Harness = await make_bot()
    _, token = await bot.services.storage.api_clients.create("nightly", now=datetime.now(UTC))
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()
    headers = {"Authorization": f"Bearer {token}"}
    body: dict[str, Any] = {"title": "Rotate keys", "channel": CHANNEL, "approvers": [ALICE, BOB]}
    if key is not None:
        body["idempotency_key"] = key
    bot.slack.after["chat.postMessage"] = server.stop
    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{api.port}") as http:
            async with http.post(REQUESTS_PATH, json=body, headers=headers) as r:
                status, refused = r.status, await r.json()
            assert status == 503, refused
            assert "nothing was changed" not in refused["error"], refused
            [made] = [w for w in refused["error"].split() if w.startswith("req_")]
            made = made.rstrip(",;:.")
            assert f"{REQUESTS_PATH}/{made}" in refused["error"], refused

            server.start()
            bot.slack.after.clear()
            bot.clock.advance(POST_LEASE + timedelta(seconds=1))
            await Scheduler(bot.services).tick()
            async with http.get(f"{REQUESTS_PATH}/{made}", headers=headers) as r:
                assert r.status == 200 and (await r.json())["status"] == "pending"
            if key is not None:  # the job asks again under its key: the same request
                async with http.post(REQUESTS_PATH, json=body, headers=headers) as r:
                    assert r.status == 200 and (await r.json())["id"] == made
    finally:
        await api.close()
    assert len(bot.slack.called("chat.postMessage")) == 1


async def test_a_request_withdrawn_as_redis_stops_is_answered_so_and_its_card_says_so(
    make_bot: Any, server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis stops just after the withdrawal landed: the 503 says it was withdrawn, and the
    job's retry (a 409: it is no longer pending) redraws the card, which still showed
    Approve and Deny."""
    bot: Harness = await make_bot()
    _, token = await bot.services.storage.api_clients.create("nightly", now=datetime.now(UTC))
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"title": "Rotate keys", "channel": CHANNEL, "approvers": [ALICE, BOB]}
    interrupts = bot.services.storage.interrupts
    cancel = interrupts.cancel_run

    async def cancel_then_stop(*args: Any, **kwargs: Any) -> Any:
        cancelled = await cancel(*args, **kwargs)
        server.stop()
        return cancelled

    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{api.port}") as http:
            async with http.post(REQUESTS_PATH, json=body, headers=headers) as r:
                made = await r.json()
            withdraw = f"{made['status_url']}/withdraw"
            monkeypatch.setattr(interrupts, "cancel_run", cancel_then_stop)
            async with http.post(withdraw, headers=headers) as r:
                status, refused = r.status, await r.json()
            assert status == 503, refused
            assert f"request {made['id']} was withdrawn" in refused["error"], refused
            monkeypatch.undo()
            server.start()
            async with http.post(withdraw, headers=headers) as r:
                status, again = r.status, await r.json()
            assert (status, again["status"]) == (409, "withdrawn"), again
    finally:
        await api.close()
    shown = str(bot.slack.called("chat.update")[-1])
    assert "Withdrawn" in shown and ids.APPROVE not in shown, shown
