"""Redis goes away under a running bot: decisions and API calls are refused with a clear
message and nothing is lost; when Redis is back, the same click goes through."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from harness import ALICE, BOB, CAROL, CHANNEL, Harness
from pydantic import SecretStr

from bot.api.agui import AGUI_PATH
from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app
from bot.ui import ids
from bot.ui.refusals import LIST_DOWN, STORAGE_DOWN, UNCONFIRMED
from signoff import Client, NewRequest
from storage import EmbeddedRedis, Storage
from storage.errors import StorageError
from storage.ids import quoted_id

API_TOKEN = "api-token-for-the-outage-test"


@pytest.fixture
def storage(own_storage: Storage) -> Storage:
    """The bot's storage is on this module's own Redis, which its tests stop and start again."""
    return own_storage


async def _stored(storage: Storage, record_id: str) -> str:
    record = await storage.queries.get(record_id)
    assert record is not None
    return json.dumps(record.model_dump(mode="json"), sort_keys=True)


async def test_a_click_while_redis_is_down_is_refused_and_works_once_it_is_back(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(storage, bot.record_id(value))

    server.stop()
    response = await bot.click(ids.APPROVE, value, user=ALICE)
    assert response.status == 200  # Slack got its ack; the click's fate is told privately
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == ALICE and refusal["text"] == STORAGE_DOWN

    server.start()
    assert await _stored(storage, bot.record_id(value)) == before
    assert bot.tool_log.calls == []
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 2 file(s)" in await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_a_click_while_redis_is_frozen_is_acked_in_time_and_told_the_truth(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)  # Redis stalls: it holds connections, answers nothing
    try:
        async with asyncio.timeout(3):  # Slack shows an error to a click unanswered in 3 s
            response = await bot.click(ids.APPROVE, value, user=ALICE)
        assert response.status == 200
    finally:
        os.kill(server.pid, signal.SIGCONT)
    # The queued click lands once Redis answers again: it is decided and the card says so,
    # as the clicker was told it would be.
    await bot.slack.wait_calls("chat.update", within=15)
    record = await storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved" and record.decided_by == ALICE
    await bot.slack.wait_calls("chat.postEphemeral")  # the note is posted after the ack
    assert [n["text"] for n in bot.slack.called("chat.postEphemeral")] == [UNCONFIRMED]


async def test_a_modal_decision_while_redis_is_down_shows_the_problem_in_the_modal(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(storage, bot.record_id(value))

    server.stop()
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="not today")
    assert status == 200
    assert json.loads(body) == {
        "response_action": "errors",
        "errors": {ids.INPUT_BLOCK: STORAGE_DOWN},
    }

    server.start()
    assert await _stored(storage, bot.record_id(value)) == before
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="not today")
    assert status == 200 and body == ""
    assert await bot.finished() == f"Finished: done: not today\ncc <@{CAROL}>"
    assert bot.tool_log.calls == []


async def test_the_runs_api_answers_503_while_redis_is_down_and_starts_nothing(
    make_bot: Any, server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """Its log says which thread's status was not read, quoting no more of the caller's
    id (up to 512 characters) than its errors do."""
    bot: Harness = await make_bot()
    thread_id = "/".join(["t" * 127] * 4)
    app = operator_app(bot.services, api_token=SecretStr(API_TOKEN))
    api = TestServer(app, host="127.0.0.1", port=0)
    await api.start_server()
    headers = {"Authorization": f"Bearer {API_TOKEN}"}
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{api.port}") as http:
            server.stop()
            async with http.post(RUNS_PATH, json=start, headers=headers) as r:
                assert r.status == 503 and "nothing was started" in (await r.json())["error"]
            sent = thread_id.replace("/", "%2F")
            async with http.get(f"{RUNS_PATH}/cleanup/{sent}", headers=headers) as r:
                assert r.status == 503
            [logged] = [r.getMessage() for r in caplog.records if r.msg.startswith("status of")]
            assert logged.startswith(f"status of {quoted_id(thread_id)} not read: "), logged
            assert "t" * 41 not in logged
            assert bot.slack.called("chat.postMessage") == []

            server.start()
            async with http.post(RUNS_PATH, json=start, headers=headers) as r:
                assert r.status == 201 and (await r.json())["stop_reason"] == "interrupt"
    finally:
        await api.close()


async def test_an_agui_resume_while_redis_is_down_is_a_503_saying_so(
    make_bot: Any, server: EmbeddedRedis
) -> None:
    """Its cards cannot be read: JSON naming the outage, as the runs API answers, not a
    500 in plain text with a traceback in the log."""
    bot: Harness = await make_bot()
    api = TestServer(
        operator_app(bot.services, api_token=SecretStr(API_TOKEN)), host="127.0.0.1", port=0
    )
    await api.start_server()
    headers = {"Authorization": f"Bearer {API_TOKEN}"}
    answer = {"interruptId": "int_1", "status": "resolved", "payload": {"type": "approve"}}
    body = {"threadId": "thread_1", "runId": "run_2", "resume": [answer]}
    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{api.port}") as http:
            server.stop()
            async with http.post(f"{AGUI_PATH}/cleanup", json=body, headers=headers) as r:
                assert r.status == 503, await r.text()
                assert "storage is unavailable" in (await r.json())["error"]
            server.start()
    finally:
        await api.close()


async def test_readyz_says_redis_is_down_without_its_address_or_error(
    make_bot: Any, server: EmbeddedRedis
) -> None:
    bot: Harness = await make_bot()
    web = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await web.start_server()
    address = server.url.split("://")[1]
    try:
        server.stop()
        async with bot.http.get(f"http://127.0.0.1:{web.port}/readyz") as answer:
            status, text = answer.status, await answer.text()
        assert status == 503
        assert text == "redis: not reachable (this Signoff process's log says why)\n"
        assert address not in text  # no address (host:port or socket path)
    finally:
        server.start()
        await web.close()


async def test_signoff_while_redis_is_down_says_so_instead_of_failing(
    make_bot: Any, server: EmbeddedRedis
) -> None:
    bot: Harness = await make_bot()
    await bot.start()
    server.stop()
    answer = await bot.command("", user=ALICE)
    assert answer["text"] == LIST_DOWN
    server.start()
    assert (await bot.command("", user=ALICE))["text"] == "1 waiting for you"


async def test_a_form_button_clicked_while_redis_is_down_tells_the_clicker(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    """Deny opens a form after one read of the record: with Redis down no form opens, and
    the clicker is told why rather than left with a button that does nothing."""
    bot: Harness = await make_bot()
    value = await bot.start()

    server.stop()
    response = await bot.click(ids.DENY, value, user=ALICE)
    assert response.status == 200
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == ALICE and refusal["text"] == STORAGE_DOWN
    assert bot.slack.called("views.open") == []
    server.start()


async def test_a_long_poll_waiting_across_a_redis_restart_answers_the_moment_it_is_decided(
    make_bot: Any, server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate waits through a Redis failover: the server's reader of the request events
    reconnects, so the decision made once Redis is back wakes the long-poll at once, not
    when it would have been renewed (a minute later)."""
    bot: Harness = await make_bot()
    outage, failed = bot.services.outage, asyncio.Event()
    noted = outage.failed

    def noting(loop: str, error: StorageError) -> float:
        if loop.startswith("request watch"):
            failed.set()
        return noted(loop, error)

    monkeypatch.setattr(outage, "failed", noting)
    audit, reading = bot.services.storage.audit, asyncio.Event()
    follow = audit.follow_requests

    async def following(**kw: Any) -> Any:
        reading.set()  # someone waits: the reader follows the request events
        return await follow(**kw)

    monkeypatch.setattr(audit, "follow_requests", following)
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()
    _, token = await bot.services.storage.api_clients.create("nightly", now=datetime.now(UTC))
    ask = NewRequest(title="Delete 42 stale volumes", channel=CHANNEL, approvers=[ALICE, BOB])
    try:
        async with Client(f"http://127.0.0.1:{api.port}", token) as client:
            made = await client.create(ask)
            waiting = asyncio.create_task(client.wait(made.id, renew_every=60))
            await asyncio.wait_for(reading.wait(), 10)
            server.stop()
            await asyncio.wait_for(failed.wait(), 10)  # the reader lost Redis while it waited
            server.start()
            value = bot.posted()["blocks"][-1]["elements"][0]["value"]
            assert (await bot.click(ids.APPROVE, value, user=ALICE)).status == 200
            decided = await asyncio.wait_for(waiting, 15)
    finally:
        await api.close()
    assert decided.status == "approved" and decided.decided_by == ALICE
