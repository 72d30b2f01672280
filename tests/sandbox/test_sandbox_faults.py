"""Injected faults behave as Slack's failures do, and slack-sdk's retry handlers cope."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox, Timing

Serve = Callable[[AsyncApp], Awaitable[str]]  # the `serve` fixture in conftest.py


async def test_rate_limit_is_429_with_retry_after(client: AsyncWebClient, sb: Sandbox) -> None:
    sb.faults.rate_limit("chat.postMessage", count=1, retry_after=7)
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel="C0OPS", text="x")
    assert caught.value.response.status_code == 429
    assert caught.value.response["error"] == "ratelimited"
    assert caught.value.response.headers["Retry-After"] == "7"
    assert (await client.chat_postMessage(channel="C0OPS", text="x"))["ok"]


async def test_rate_limit_handler_retries_after_the_pause(sb: Sandbox) -> None:
    client = AsyncWebClient(
        base_url=sb.api_url,
        token=sb.bot_token,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)],
    )
    sb.faults.rate_limit("chat.postMessage", count=2, retry_after=0)
    response = await client.chat_postMessage(channel="C0OPS", text="eventually")
    assert response["ok"]
    assert [c.status for c in sb.faults.calls("chat.postMessage")] == [429, 429, 200]
    assert [m.text for m in sb.workspace.history("C0OPS")] == ["eventually"]


async def test_faults_only_hit_their_method(client: AsyncWebClient, sb: Sandbox) -> None:
    sb.faults.rate_limit("chat.update", count=1)
    assert (await client.chat_postMessage(channel="C0OPS", text="x"))["ok"]


async def test_server_errors_and_their_retry_handler(sb: Sandbox) -> None:
    plain = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    sb.faults.server_error("users.info", count=1, status=503)
    with pytest.raises(SlackApiError) as caught:
        await plain.users_info(user="U0BOB")
    assert caught.value.response.status_code == 503

    retrying = AsyncWebClient(
        base_url=sb.api_url,
        token=sb.bot_token,
        retry_handlers=[AsyncServerErrorRetryHandler(max_retry_count=1)],
    )
    sb.faults.server_error("users.info", count=1, status=500)
    assert (await retrying.users_info(user="U0BOB"))["user"]["id"] == "U0BOB"


async def test_latency_slows_calls(client: AsyncWebClient, sb: Sandbox) -> None:
    sb.faults.latency("auth.test", seconds=0.3, count=1)
    started = time.monotonic()
    await client.auth_test()
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    await client.auth_test()
    assert time.monotonic() - started < 0.3


@pytest.mark.parametrize("timing", [Timing(ack_timeout=0.2)], indirect=True)
async def test_dropped_delivery_never_reaches_the_app(
    sb: Sandbox, app: AsyncApp, serve: Serve, client: AsyncWebClient
) -> None:
    clicks: list[dict[str, Any]] = []

    @app.action("go")
    async def on_go(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        clicks.append(body)

    await serve(app)
    blocks = [
        {
            "type": "actions",
            "elements": [
                {"type": "button", "action_id": "go", "text": {"type": "plain_text", "text": "Go"}}
            ],
        }
    ]
    ts = (await client.chat_postMessage(channel="C0OPS", text="go", blocks=blocks))["ts"]
    sb.faults.drop_deliveries(1)
    lost = await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="go")
    assert lost.status == "timed_out"
    assert "Operation timed out" in sb.workspace.notices("U0ALICE")[0].text
    kept = await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="go")
    assert kept.status == "acked"
    await sb.wait_for(lambda: clicks)
    assert len(clicks) == 1


async def test_admin_endpoint_injects_faults_and_reads_the_log(
    client: AsyncWebClient, sb: Sandbox
) -> None:
    async with aiohttp.ClientSession(base_url=sb.base_url) as http:
        async with http.post(
            "/admin/faults",
            json={
                "kind": "ratelimit",
                "method": "chat.postMessage",
                "count": 1,
                "retry_after": 3,
            },
        ) as response:
            assert response.status == 200
        async with http.post("/admin/faults", json={"kind": "bogus"}) as response:
            assert response.status == 400
        with pytest.raises(SlackApiError):
            await client.chat_postMessage(channel="C0OPS", text="x")
        async with http.get("/admin/calls", params={"method": "chat.postMessage"}) as response:
            calls = (await response.json())["calls"]
        assert [(c["status"], c["error"]) for c in calls] == [(429, "ratelimited")]
        assert calls[0]["args"] == {"channel": "C0OPS", "text": "x"}

        async with http.post("/admin/faults", json={"kind": "server_error"}) as response:
            assert response.status == 200
        async with http.delete("/admin/faults") as response:
            assert response.status == 200
        assert (await client.auth_test())["ok"]

        async with http.put(
            "/admin/request-url", json={"url": "http://127.0.0.1:9/slack/events"}
        ) as response:
            assert response.status == 200
        assert sb.request_url == "http://127.0.0.1:9/slack/events"
