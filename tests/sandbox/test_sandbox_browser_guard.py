"""Another web page in the user's browser cannot act in the sandbox (CSRF).

A cross-site page can POST `text/plain` without a preflight, and its browser names it in
`Origin`; both are refused on the page API and the admin routes. The page's own requests
still work: the browser tests in tests/e2e click, submit and type through them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox

CLICK = {"user": "U0ALICE", "channel": "C0OPS", "message_ts": "", "action_id": "approve"}
BUTTON = [
    {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "text": {"type": "plain_text", "text": "Approve"},
            }
        ],
    }
]
EVIL = "http://evil.example"


@pytest.fixture
async def http(sb: Sandbox) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=sb.base_url) as session:
        yield session


@pytest.fixture
async def click(client: AsyncWebClient) -> dict[str, str]:
    """A click on a real button, so only the guard can refuse it."""
    ts = (await client.chat_postMessage(channel="C0OPS", text="go?", blocks=BUTTON))["ts"]
    return {**CLICK, "message_ts": ts}


# What a cross-site page would send: valid requests, but for their content type or origin.
ACTIONS = {
    "/ui/message": {"user": "U0ALICE", "channel": "C0OPS", "text": "sent by another site"},
    "/ui/home": {"user": "U0ALICE"},
    "/admin/faults": {"kind": "server_error", "method": "auth.test", "count": 5},
    "/admin/redeliver": {},
}


async def _nothing_changed(sb: Sandbox, client: AsyncWebClient) -> None:
    assert sb.workspace.history("C0OPS") == [] and sb.deliveries == []
    assert (await client.auth_test())["ok"], "no fault was injected"


@pytest.mark.parametrize("path", sorted(ACTIONS))
async def test_a_text_plain_post_is_refused(
    http: aiohttp.ClientSession, sb: Sandbox, client: AsyncWebClient, path: str
) -> None:
    body = json.dumps(ACTIONS[path])
    async with http.post(path, data=body, headers={"Content-Type": "text/plain"}) as response:
        assert response.status == 415
        assert "application/json" in (await response.json())["error"]
    async with http.post(path, data=b"") as response:
        assert response.status == 415, "no content type at all is refused too"
    await _nothing_changed(sb, client)


async def test_a_cross_site_click_does_nothing(
    http: aiohttp.ClientSession, sb: Sandbox, click: dict[str, str]
) -> None:
    plain = {"Content-Type": "text/plain"}
    async with http.post("/ui/click", data=json.dumps(click), headers=plain) as response:
        assert response.status == 415
    async with http.post("/ui/click", json=click, headers={"Origin": EVIL}) as response:
        assert response.status == 403
        assert EVIL in (await response.json())["error"]
    assert sb.deliveries == [] and sb.workspace.notices("U0ALICE") == []


@pytest.mark.parametrize("origin", [EVIL, "null", "http://127.0.0.1:1", "https://localhost"])
async def test_a_foreign_origin_is_refused(
    http: aiohttp.ClientSession, sb: Sandbox, client: AsyncWebClient, origin: str
) -> None:
    foreign = {"Origin": origin}
    for path, body in ACTIONS.items():
        async with http.post(path, json=body, headers=foreign) as response:
            assert response.status == 403, path
    async with http.put("/admin/request-url", json={"url": EVIL}, headers=foreign) as response:
        assert response.status == 403
    for path in ("/admin/calls", "/admin/deliveries", "/ui/state?user=U0ALICE"):
        async with http.get(path, headers=foreign) as response:
            assert response.status == 403, path
    assert sb.request_url is None
    await _nothing_changed(sb, client)


async def test_the_pages_own_origin_is_accepted(
    http: aiohttp.ClientSession, sb: Sandbox, click: dict[str, str]
) -> None:
    port = sb.base_url.rsplit(":", 1)[1]
    for origin in (sb.base_url, f"http://localhost:{port}", f"http://[::1]:{port}"):
        async with http.post("/ui/click", json=click, headers={"Origin": origin}) as response:
            assert response.status == 200, origin
            assert (await response.json())["ack"]["status"] == "no_app"
    async with http.get("/ui/workspace", headers={"Origin": sb.base_url}) as response:
        assert response.status == 200


async def test_apps_and_scripts_without_an_origin_are_unaffected(
    http: aiohttp.ClientSession, client: AsyncWebClient, sb: Sandbox
) -> None:
    async with http.post("/admin/faults", json={"kind": "server_error"}) as response:
        assert response.status == 200
    async with http.delete("/admin/faults") as response:
        assert response.status == 200
    form = {"token": sb.bot_token, "channel": "C0OPS", "text": "form-encoded, as slack-sdk may"}
    async with http.post("/api/chat.postMessage", data=form) as response:
        assert (await response.json())["ok"] is True
    assert (await client.auth_test())["ok"]


async def test_a_page_that_rebinds_its_name_to_loopback_cannot_read_the_workspace(
    http: aiohttp.ClientSession,
) -> None:
    async with http.get("/ui/state", headers={"Host": "evil.example:80"}) as answer:
        assert answer.status == 421
    async with http.get("/ui/workspace") as answer:  # addressed as 127.0.0.1: served
        assert answer.status == 200
