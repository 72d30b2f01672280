"""The approve flow over Socket Mode, through a local endpoint (issue 4, test 12)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from fakes import BOT_TOKEN, FakeSlack, click_payload
from harness import ALICE, CHANNEL, Harness
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.socket_mode.aiohttp import SocketModeClient

from bot.api.agui import AGUI_PATH
from bot.api.openapi import OPENAPI_PATH
from bot.api.request_records import REQUESTS_PATH
from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app
from bot.slack.app import build_app
from bot.slack.events import EVENTS_PATH
from bot.slack.socket_mode import (
    TimedSocketModeHandler,
    connection_check,
    watch_connection,
)
from bot.ui import ids

ROOT = Path(__file__).resolve().parents[2]
HANDLER_LOG = logging.getLogger("bot.slack.socket_mode")


async def test_approve_over_socket_mode_runs_the_tool_once(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    app = build_app(bot.services, signing_secret=None)
    handler = AsyncSocketModeHandler(app, "xapp-test-token", web_client=bot.services.client)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    try:
        value = await bot.start()
        payload = click_payload(
            action_id=ids.APPROVE,
            value=value,
            user=ALICE,
            channel=CHANNEL,
            message_ts=bot.message_ts(),
        )
        envelope = await bot.slack.deliver(payload)
        await bot.slack.wait_for(
            lambda: any(a.get("envelope_id") == envelope for a in bot.slack.socket_acks),
            what="the envelope's ack",
        )
        assert "deleted 2 file(s)" in await bot.finished()
        assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
        assert await handler.client.is_connected()
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]


async def test_socket_mode_measures_how_long_each_ack_took(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``signoff_ack_seconds`` counts each envelope acked, and none Bolt left without an
    ack (Slack sends those again)."""
    bot: Harness = await make_bot()
    handler = TimedSocketModeHandler(
        build_app(bot.services, signing_secret=None),
        "xapp-test-token",
        web_client=bot.services.client,
        acks=bot.services.metrics.ack,
        deliveries=bot.services.storage.deliveries,
    )
    unacked = _Heard("Bolt answered envelope")
    HANDLER_LOG.addHandler(unacked)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    try:
        with caplog.at_level(logging.INFO, logger=HANDLER_LOG.name):
            unhandled = {"type": "event_callback", "event": {"type": "reaction_added"}}
            await bot.slack.deliver(unhandled, kind="events_api")
            await asyncio.wait_for(unacked.heard.wait(), 5)
        assert "signoff_ack_seconds_count 0" in await _metrics(bot)
        click = click_payload(
            action_id=ids.APPROVE, value="x", user=ALICE, channel=CHANNEL, message_ts="1.1"
        )
        envelope = await bot.slack.deliver(click)
        await bot.slack.wait_for(
            lambda: any(a.get("envelope_id") == envelope for a in bot.slack.socket_acks),
            what="the click's ack",
        )
        text = await _metrics(bot)
        assert "signoff_ack_seconds_count 1" in text
        assert 'signoff_ack_seconds_bucket{le="+Inf"} 1' in text
        assert "signoff_ack_seconds_sum 0.000000" not in text
    finally:
        HANDLER_LOG.removeHandler(unacked)
        await handler.close_async()  # type: ignore[no-untyped-call]


class _Heard(logging.Handler):
    """Sets ``heard`` once a record whose message starts with ``start`` is logged."""

    def __init__(self, start: str) -> None:
        super().__init__()
        self.start, self.heard = start, asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.start):
            self.heard.set()


async def _metrics(bot: Harness) -> str:
    async with bot.http.get(bot.url + "/metrics") as response:
        assert response.status == 200
        return await response.text()


async def test_readyz_follows_the_socket_mode_connection(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    handler = AsyncSocketModeHandler(
        build_app(bot.services, signing_secret=None),
        "xapp-test-token",
        web_client=bot.services.client,
    )
    checks = (connection_check(handler),)
    server = TestServer(operator_app(bot.services, checks=checks), host="127.0.0.1", port=0)
    await server.start_server()
    url = f"http://127.0.0.1:{server.port}"

    async def status(path: str) -> tuple[int, str]:
        async with bot.http.get(url + path) as response:
            return response.status, await response.text()

    try:
        code, text = await status("/readyz")
        assert code == 503 and "Socket Mode connection is down" in text
        await handler.connect_async()  # type: ignore[no-untyped-call]
        assert await status("/readyz") == (200, "ready\n")
        assert (await status("/healthz"))[0] == 200
        code, text = await status("/metrics")
        assert code == 200 and "signoff_pending_interrupts 0" in text
        async with bot.http.post(url + EVENTS_PATH, data=b"{}") as response:
            assert response.status == 404  # no events route in Socket Mode
        await handler.close_async()  # type: ignore[no-untyped-call]
        code, text = await status("/readyz")
        assert code == 503 and "Socket Mode connection is down" in text
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]
        await server.close()


API_TOKEN = "operator-token-" + "x" * 24


async def test_signoff_socket_serves_readyz_metrics_and_the_apis_on_its_port(
    slack: FakeSlack, redis_url: str, key_prefix: str
) -> None:
    """What the README says ``signoff socket`` runs (click deciders, resume workers and
    the scheduler) and serves on ``SIGNOFF_PORT``: the operator endpoints, the requests
    API and its OpenAPI document, and with ``SIGNOFF_API_TOKEN`` the runs API and the
    AG-UI endpoint; no Slack events route."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'bot'}",
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": "xapp-test-token",
        "SIGNOFF_SLACK_API_URL": slack.api_url,
        "REDIS_URL": redis_url,
        "SIGNOFF_REDIS_PREFIX": key_prefix,
        "SIGNOFF_AGENTS": "cleanup_agents",
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_API_TOKEN": API_TOKEN,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; from bot.process.cli import main; raise SystemExit(main(sys.argv[1:]))",
        "socket",
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(30):
            while b"connected to Slack over Socket Mode" not in await process.stderr.readline():
                assert process.returncode is None
            while b"are running" not in (running := await process.stderr.readline()):
                assert running, "signoff socket stopped before its loops ran"
        # The README's "Socket Mode, plus deciders, resume workers and scheduler".
        assert b"1 click decider, 2 resume workers and the scheduler are running" in running
        url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "/readyz") as response:
                assert (response.status, await response.text()) == (200, "ready\n")
            async with http.get(url + "/metrics") as response:
                assert response.status == 200
                assert "signoff_pending_interrupts 0" in await response.text()
            async with http.get(url + OPENAPI_PATH) as response:
                assert response.status == 200 and (await response.json())["openapi"]
            async with http.get(url + REQUESTS_PATH + "/req_none") as response:
                assert response.status == 401  # served: it asks for a client's token
            bearer = {"Authorization": f"Bearer {API_TOKEN}"}
            async with http.get(url + RUNS_PATH + "/cleanup/thread_none", headers=bearer) as r:
                assert r.status == 404 and "is off" not in (await r.json())["error"]
            async with http.post(url + AGUI_PATH + "/cleanup", json={}) as response:
                assert response.status == 401  # on, and refusing a caller without the token
            async with http.post(url + EVENTS_PATH, data=b"{}") as response:
                assert response.status == 404
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            await process.communicate()
    assert process.returncode == 0


async def test_a_connection_lost_for_longer_than_its_address_lives_comes_back(
    make_bot: Any,
) -> None:
    """Slack's Socket Mode addresses are temporary: the watchdog asks for a new one."""
    bot: Harness = await make_bot()
    handler = AsyncSocketModeHandler(
        build_app(bot.services, signing_secret=None),
        "xapp-test-token",
        web_client=bot.services.client,
    )
    await handler.connect_async()  # type: ignore[no-untyped-call]
    watchdog = asyncio.create_task(watch_connection(handler, every=0.05))
    try:
        await bot.slack.wait_for(lambda: len(bot.slack.sockets) == 1)
        bot.slack.down = True  # Slack goes away for a while: the connection drops
        bot.slack.ticket += 1  # and the address it connected to expires meanwhile
        await bot.slack.sockets[0].close()

        def asked_while_down() -> bool:
            return any(c.method == "apps.connections.open" for c in bot.slack.failed)

        await bot.slack.wait_for(asked_while_down, what="a reconnection tried while down")
        bot.slack.down = False
        await bot.slack.wait_for(lambda: len(bot.slack.sockets) == 2, what="a new connection")
        click = click_payload(
            action_id=ids.APPROVE, value="x", user=ALICE, channel=CHANNEL, message_ts="1.1"
        )
        await bot.slack.deliver(click)
        await bot.slack.wait_for(lambda: bool(bot.slack.socket_acks), what="its ack")
    finally:
        watchdog.cancel()
        await handler.close_async()  # type: ignore[no-untyped-call]


async def test_the_watchdog_does_not_reconnect_a_connection_slack_sdk_just_restored() -> None:
    client = SocketModeClient(app_token="xapp-1-review")
    state = {"connected": False, "connects": 0}
    checked, finished = asyncio.Event(), asyncio.Event()

    async def is_connected() -> bool:
        if not state["connected"]:
            checked.set()
        return bool(state["connected"])

    async def issue_new_wss_url() -> str:
        return "wss://example.invalid/link"

    async def connect() -> None:
        state["connects"] += 1
        state["connected"] = True

    real = client.connect_to_new_endpoint

    async def connect_to_new_endpoint(force: bool = False) -> None:
        try:
            await real(force=force)
        finally:
            finished.set()

    client.is_connected = is_connected  # type: ignore[method-assign]
    client.issue_new_wss_url = issue_new_wss_url  # type: ignore[method-assign]
    client.connect = connect  # type: ignore[method-assign]
    client.connect_to_new_endpoint = connect_to_new_endpoint  # type: ignore[method-assign]
    handler: Any = SimpleNamespace(client=client)

    await client.connect_operation_lock.acquire()  # slack-sdk's own reconnect is under way
    watchdog = asyncio.create_task(watch_connection(handler, every=0.01))
    try:
        await checked.wait()  # the watchdog found it down, mid-reconnect
        await connect()  # slack-sdk's reconnect succeeds
        client.connect_operation_lock.release()
        await finished.wait()
    finally:
        watchdog.cancel()
        await client.close()
    assert state["connects"] == 1, f"connected {state['connects']} times"


async def test_an_envelope_in_hand_when_the_process_stops_is_acked_before_it_disconnects(
    make_bot: Any,
) -> None:
    """As HTTP mode lets a request being answered finish when it stops: a click queued
    as Socket Mode closes still gets its ack, so Slack shows its clicker no error."""
    bot: Harness = await make_bot(workers=0, deciders=0)
    handler = TimedSocketModeHandler(
        build_app(bot.services, signing_secret=None),
        "xapp-test-token",
        web_client=bot.services.client,
        acks=bot.services.metrics.ack,
        deliveries=bot.services.storage.deliveries,
    )
    await handler.connect_async()  # type: ignore[no-untyped-call]
    value = await bot.start()
    clicks = bot.services.storage.clicks
    append, queuing, queued = clicks.append, asyncio.Event(), asyncio.Event()

    async def append_when_told(**click: Any) -> Any:
        queuing.set()
        await queued.wait()
        return await append(**click)

    clicks.append = append_when_told  # type: ignore[method-assign]
    click = click_payload(
        action_id=ids.APPROVE, value=value, user=ALICE, channel=CHANNEL, message_ts=bot.message_ts()
    )
    envelope = await bot.slack.deliver(click)
    await asyncio.wait_for(queuing.wait(), 5)
    closing = asyncio.create_task(handler.close_after_acks())
    queued.set()
    await closing
    await bot.slack.acked(envelope)
    assert await bot.services.storage.clicks.lag() == 1
    assert not await handler.client.is_connected()
