"""SandboxClient drives a whole approval through the sandbox's HTTP interface."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox, SandboxClient, UserActionError

Serve = Callable[[AsyncApp], Awaitable[str]]  # the `serve` fixture in conftest.py

EDIT_MODAL = {
    "type": "modal",
    "callback_id": "edit",
    "title": {"type": "plain_text", "text": "Edit"},
    "submit": {"type": "plain_text", "text": "Approve"},
    "private_metadata": "int-7",
    "blocks": [
        {
            "type": "input",
            "block_id": "to",
            "label": {"type": "plain_text", "text": "To"},
            "element": {
                "type": "plain_text_input",
                "action_id": "v",
                "initial_value": "ops@example.com",
            },
        }
    ],
}


@pytest.fixture
async def scripted(sb: Sandbox) -> AsyncIterator[SandboxClient]:
    async with SandboxClient(sb.base_url) as client:
        yield client


def _approval_app(app: AsyncApp) -> AsyncApp:
    @app.command("/signoff")
    async def start(ack: AsyncAck, command: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.chat_postMessage(
            channel=command["channel_id"],
            text="Send the email?",
            blocks=[
                {"type": "section", "text": {"type": "mrkdwn", "text": "Send the email?"}},
                {
                    "type": "actions",
                    "block_id": "d",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "edit",
                            "text": {"type": "plain_text", "text": "Edit"},
                        }
                    ],
                },
            ],
        )

    @app.action("edit")
    async def edit(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(
            trigger_id=body["trigger_id"],
            view={**EDIT_MODAL, "private_metadata": body["container"]["message_ts"]},
        )

    @app.view("edit")
    async def submitted(
        ack: AsyncAck, view: dict[str, Any], client: AsyncWebClient, body: dict[str, Any]
    ) -> None:
        to = view["state"]["values"]["to"]["v"]["value"]
        if "@" not in to:
            await ack(response_action="errors", errors={"to": "Not an email address."})
            return
        await ack()
        await client.chat_update(
            channel="C0OPS",
            ts=view["private_metadata"],
            blocks=[],
            text=f"Sent to {to}, approved by <@{body['user']['id']}>",
        )

    return app


async def test_a_scripted_approval_end_to_end(
    sb: Sandbox, app: AsyncApp, serve: Serve, scripted: SandboxClient
) -> None:
    await serve(_approval_app(app))
    assert (await scripted.command("U0ALICE", channel="C0OPS", command="/signoff"))["status"] == (
        "acked"
    )
    messages = await scripted.wait_for("U0ALICE", lambda s: s["messages"], channel="C0OPS")
    ts = messages[0]["ts"]
    await scripted.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="edit")
    modal = (await scripted.wait_for("U0ALICE", lambda s: s["modals"]))[-1]
    assert modal["blocks"][0]["element"]["initial_value"] == "ops@example.com"

    refused = await scripted.submit_view(
        "U0ALICE", view_id=modal["id"], values={"to": {"v": "nobody"}}
    )
    assert refused["modals"][-1]["errors"] == {"to": "Not an email address."}
    done = await scripted.submit_view(
        "U0ALICE", view_id=modal["id"], values={"to": {"v": "team@example.com"}}
    )
    assert done["modals"] == []
    text = await scripted.wait_for(
        "U0BOB",
        lambda s: s["messages"][0]["text"].startswith("Sent") and s["messages"][0]["text"],
        channel="C0OPS",
    )
    assert text == "Sent to team@example.com, approved by <@U0ALICE>"
    assert [c["method"] for c in await scripted.calls()] == [
        "auth.test",
        "chat.postMessage",
        "views.open",
        "chat.update",
    ]


async def test_client_reports_impossible_actions(scripted: SandboxClient) -> None:
    with pytest.raises(UserActionError, match="U0NOBODY"):
        await scripted.say("U0NOBODY", channel="C0OPS", text="hi")


async def test_client_admin_faults(
    scripted: SandboxClient, client: AsyncWebClient, sb: Sandbox
) -> None:
    await scripted.inject({"kind": "server_error", "method": "auth.test", "count": 2})
    with pytest.raises(SlackApiError) as caught:
        await client.auth_test()
    assert caught.value.response.status_code == 500
    await scripted.clear_faults()
    assert (await client.auth_test())["ok"], "the second injected failure was cleared"
    assert [c["status"] for c in await scripted.calls("auth.test")] == [500, 200]

    await scripted.set_request_url("http://127.0.0.1:9/slack/events")
    assert sb.request_url == "http://127.0.0.1:9/slack/events"
    await scripted.set_request_url(None)
    assert sb.request_url is None
