"""The page and its JSON API: what scripted clients (and the page) use to act as a user."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox

STATIC = Path(__file__).resolve().parents[2] / "sandbox" / "static"


@pytest.fixture
async def http(sb: Sandbox) -> Any:
    async with aiohttp.ClientSession(base_url=sb.base_url) as session:
        yield session


async def test_page_and_its_scripts_are_served(http: aiohttp.ClientSession) -> None:
    async with http.get("/") as response:
        html = await response.text()
    assert response.status == 200 and "acting-as" in html
    for src in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
        async with http.get(src) as asset:
            assert asset.status == 200, src


def test_page_scripts_never_build_html_from_strings() -> None:
    for script in STATIC.glob("*.js"):
        source = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in source, f"{script.name} uses {sink}"


async def test_state_shows_what_the_acting_user_sees(
    http: aiohttp.ClientSession, client: AsyncWebClient
) -> None:
    posted = await client.chat_postMessage(channel="C0OPS", text="hello")
    await client.chat_postMessage(channel="C0OPS", text="in thread", thread_ts=posted["ts"])
    await client.chat_postEphemeral(channel="C0OPS", user="U0BOB", text="for bob")
    params = {"user": "U0BOB", "channel": "C0OPS", "thread": posted["ts"]}
    async with http.get("/ui/state", params=params) as response:
        state = await response.json()
    assert [c["id"] for c in state["channels"]] == ["C0GENERAL", "C0OPS", "C0RANDOM"]
    assert [m["text"] for m in state["messages"]] == ["hello"]
    assert state["messages"][0]["reply_count"] == 1
    assert [m["text"] for m in state["thread"]] == ["hello", "in thread"]
    assert [e["text"] for e in state["ephemerals"]] == ["for bob"]
    params["user"] = "U0ALICE"
    async with http.get("/ui/state", params=params) as response:
        assert (await response.json())["ephemerals"] == []


async def test_state_long_polls_until_something_changes(
    http: aiohttp.ClientSession, client: AsyncWebClient, sb: Sandbox
) -> None:
    version = sb.workspace.version
    async with http.get("/ui/state", params={"user": "U0BOB", "since": version - 1}) as response:
        assert (await response.json())["version"] == version

    async def poll() -> dict[str, Any]:
        params = {"user": "U0BOB", "channel": "C0OPS", "since": version}
        async with http.get("/ui/state", params=params) as response:
            return dict(await response.json())

    waiting = asyncio.ensure_future(poll())
    done, _ = await asyncio.wait({waiting}, timeout=0.3)
    assert not done, "nothing changed, so the poll is still waiting"
    await client.chat_postMessage(channel="C0OPS", text="news")
    state = await asyncio.wait_for(waiting, 5)
    assert state["version"] > version and state["messages"][-1]["text"] == "news"


async def test_user_actions_without_an_app_report_it(
    http: aiohttp.ClientSession, client: AsyncWebClient
) -> None:
    blocks = [
        {
            "type": "actions",
            "elements": [
                {"type": "button", "action_id": "go", "text": {"type": "plain_text", "text": "Go"}}
            ],
        }
    ]
    ts = (await client.chat_postMessage(channel="C0OPS", text="x", blocks=blocks))["ts"]
    body = {"user": "U0ALICE", "channel": "C0OPS", "message_ts": ts, "action_id": "go"}
    async with http.post("/ui/click", json=body) as response:
        assert (await response.json())["ack"]["status"] == "no_app"
    async with http.get("/ui/users/U0ALICE/notices") as response:
        notices = (await response.json())["notices"]
    assert "not connected" in notices[0]["text"]
    async with http.post(
        "/ui/notices/dismiss", json={"user": "U0ALICE", "notice_id": notices[0]["id"]}
    ) as response:
        assert response.status == 200
    async with http.get("/ui/users/U0ALICE/notices") as response:
        assert (await response.json())["notices"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"user": "U0NOBODY", "channel": "C0OPS", "message_ts": "1.0", "action_id": "go"},
        {"user": "U0ALICE", "channel": "C0OPS", "message_ts": "1.0", "action_id": "go"},
        {"user": "U0ALICE", "action_id": "go"},
        {"user": "U0ALICE", "action_id": "go", "surprise": True},
    ],
)
async def test_impossible_clicks_are_400_with_a_reason(
    http: aiohttp.ClientSession, body: dict[str, Any]
) -> None:
    async with http.post("/ui/click", json=body) as response:
        assert response.status == 400
        assert (await response.json())["error"]


async def test_unknown_slash_command_is_refused(http: aiohttp.ClientSession) -> None:
    body = {"user": "U0ALICE", "channel": "C0OPS", "command": "/nope", "text": ""}
    async with http.post("/ui/command", json=body) as response:
        assert response.status == 400
        assert "/signoff" in (await response.json())["error"]


async def test_user_messages_and_threads(http: aiohttp.ClientSession, sb: Sandbox) -> None:
    async with http.post(
        "/ui/message", json={"user": "U0DAVE", "channel": "C0GENERAL", "text": "morning"}
    ) as response:
        ts = (await response.json())["ts"]
    async with http.post(
        "/ui/message",
        json={"user": "U0ALICE", "channel": "C0GENERAL", "text": "hi", "thread_ts": ts},
    ) as response:
        assert (await response.json())["ack"] is None, "no mention, no event"
    assert [m.user for m in sb.workspace.replies("C0GENERAL", ts)] == ["U0DAVE", "U0ALICE"]
