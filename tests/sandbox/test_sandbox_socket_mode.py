"""Socket Mode: slack-bolt's aiohttp AsyncSocketModeHandler connects and gets deliveries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox

MODAL = {
    "type": "modal",
    "callback_id": "edit",
    "title": {"type": "plain_text", "text": "Edit"},
    "submit": {"type": "plain_text", "text": "Save"},
    "blocks": [
        {
            "type": "input",
            "block_id": "args",
            "label": {"type": "plain_text", "text": "Args"},
            "element": {"type": "plain_text_input", "action_id": "json"},
        }
    ],
}


@pytest.fixture
async def handler(sb: Sandbox, app: AsyncApp) -> AsyncIterator[AsyncSocketModeHandler]:
    socket = AsyncSocketModeHandler(
        app, sb.app_token, web_client=AsyncWebClient(base_url=sb.api_url)
    )
    yield socket
    await socket.close_async()


async def test_apps_connections_open_needs_the_app_token(sb: Sandbox) -> None:
    response = await AsyncWebClient(base_url=sb.api_url, token=sb.app_token).apps_connections_open(
        app_token=sb.app_token
    )
    assert response["url"].startswith("ws://127.0.0.1:")
    with pytest.raises(SlackApiError) as caught:
        await AsyncWebClient(base_url=sb.api_url, token=sb.bot_token).apps_connections_open(
            app_token=sb.bot_token
        )
    assert caught.value.response["error"] == "not_allowed_token_type"


async def test_click_and_modal_over_socket_mode(
    sb: Sandbox, app: AsyncApp, handler: AsyncSocketModeHandler
) -> None:
    clicks: list[dict[str, Any]] = []

    @app.action("edit")
    async def on_edit(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        clicks.append(body)
        await client.views_open(trigger_id=body["trigger_id"], view=MODAL)

    @app.view("edit")
    async def on_submit(ack: AsyncAck, view: dict[str, Any]) -> None:
        if view["state"]["values"]["args"]["json"]["value"] != "{}":
            await ack(response_action="errors", errors={"args": "Not valid JSON."})
        else:
            await ack(response_action="clear")

    await handler.connect_async()
    await sb.wait_for(lambda: sb.socket_connections)
    assert await handler.client.is_connected()

    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    blocks = [
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "action_id": "edit",
                    "text": {"type": "plain_text", "text": "Edit"},
                }
            ],
        }
    ]
    ts = (await client.chat_postMessage(channel="C0OPS", text="x", blocks=blocks))["ts"]
    ack = await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="edit")
    assert ack.status == "acked"
    modal = await sb.wait_for(lambda: next(iter(sb.workspace.modals("U0ALICE")), None))
    assert clicks[0]["container"]["message_ts"] == ts

    refused = await sb.interactions.submit_view(
        "U0ALICE", view_id=modal.id, values={"args": {"json": "{oops"}}
    )
    assert refused is not None and refused.status == "acked"
    assert sb.workspace.modals("U0ALICE")[-1].errors == {"args": "Not valid JSON."}
    await sb.interactions.submit_view("U0ALICE", view_id=modal.id, values={"args": {"json": "{}"}})
    assert sb.workspace.modals("U0ALICE") == []
    assert sb.request_url is None, "nothing went over HTTP"


async def test_slash_command_and_event_over_socket_mode(
    sb: Sandbox, app: AsyncApp, handler: AsyncSocketModeHandler
) -> None:
    mentions: list[dict[str, Any]] = []

    @app.command("/signoff")
    async def on_command(ack: AsyncAck, command: dict[str, Any]) -> None:
        await ack(f"Starting {command['text']}")

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        mentions.append(event)

    await handler.connect_async()
    await sb.wait_for(lambda: sb.socket_connections)
    ack = await sb.interactions.slash_command(
        "U0BOB", channel="C0OPS", command="/signoff", text="cleanup"
    )
    assert ack.status == "acked"
    assert [e.text for e in sb.workspace.ephemerals("U0BOB", "C0OPS")] == ["Starting cleanup"]
    bot = sb.workspace.app.bot_user_id
    await sb.interactions.post_message("U0BOB", channel="C0OPS", text=f"hey <@{bot}>")
    await sb.wait_for(lambda: mentions)
    assert mentions[0]["user"] == "U0BOB"


def _recorder(name: str, into: list[tuple[str, str]]) -> Any:
    async def on_command(ack: AsyncAck, command: dict[str, Any]) -> None:
        await ack()
        into.append((name, command["text"]))

    return on_command


async def test_each_envelope_goes_to_exactly_one_connection(sb: Sandbox) -> None:
    received: list[tuple[str, str]] = []
    handlers = []
    for name in ("first", "second"):
        bolt = AsyncApp(
            client=AsyncWebClient(base_url=sb.api_url, token=sb.bot_token),
            signing_secret=sb.signing_secret,
        )
        bolt.command("/signoff")(_recorder(name, received))
        handler = AsyncSocketModeHandler(
            bolt, sb.app_token, web_client=AsyncWebClient(base_url=sb.api_url)
        )
        await handler.connect_async()
        handlers.append(handler)
    try:
        await sb.wait_for(lambda: sb.socket_connections == 2)
        for text in ("a", "b", "c", "d"):
            ack = await sb.interactions.slash_command(
                "U0BOB", channel="C0OPS", command="/signoff", text=text
            )
            assert ack.status == "acked"
        await sb.wait_for(lambda: len(received) == 4)
        assert sorted(text for _, text in received) == ["a", "b", "c", "d"]
        assert {name for name, _ in received} == {"first", "second"}
    finally:
        for handler in handlers:
            await handler.close_async()
