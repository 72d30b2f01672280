"""Modals over HTTP delivery: trigger ids, view_submission acks, field errors, view_closed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block, InputBlock
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox, Timing

Serve = Callable[[AsyncApp], Awaitable[str]]  # the `serve` fixture in conftest.py

DENY = [
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "action_id": "deny",
                "style": "danger",
                "text": {"type": "plain_text", "text": "Deny"},
            }
        ],
    }
]

REASON_MODAL = {
    "type": "modal",
    "callback_id": "deny_reason",
    "private_metadata": "int-1",
    "notify_on_close": True,
    "title": {"type": "plain_text", "text": "Deny"},
    "submit": {"type": "plain_text", "text": "Deny"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Why?"},
            "element": {"type": "plain_text_input", "action_id": "text", "multiline": True},
        },
        {
            "type": "input",
            "block_id": "scope",
            "label": {"type": "plain_text", "text": "Scope"},
            "element": {
                "type": "static_select",
                "action_id": "pick",
                "options": [
                    {"text": {"type": "plain_text", "text": "This run"}, "value": "run"},
                    {"text": {"type": "plain_text", "text": "Always"}, "value": "always"},
                ],
            },
        },
    ],
}


async def _post(sb: Sandbox) -> str:
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    return str((await client.chat_postMessage(channel="C0OPS", text="deny?", blocks=DENY))["ts"])


async def test_modal_round_trip_with_field_errors_update_and_close(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    submissions: list[dict[str, Any]] = []
    closed: list[dict[str, Any]] = []

    @app.action("deny")
    async def open_reason(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=REASON_MODAL)

    @app.view("deny_reason")
    async def on_submit(ack: AsyncAck, view: dict[str, Any]) -> None:
        submissions.append(view)
        reason = view["state"]["values"]["reason"]["text"]["value"]
        if len(reason) < 5:
            await ack(response_action="errors", errors={"reason": "Say a little more."})
        else:
            await ack(
                response_action="update",
                view={
                    "type": "modal",
                    "title": {"type": "plain_text", "text": "Denied"},
                    "callback_id": "deny_reason",
                    "notify_on_close": True,
                    "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Done."}}],
                },
            )

    @app.view_closed("deny_reason")
    async def on_close(ack: AsyncAck, view: dict[str, Any]) -> None:
        await ack()
        closed.append(view)

    await serve(app)
    ts = await _post(sb)
    await sb.interactions.click("U0CAROL", channel="C0OPS", message_ts=ts, action_id="deny")
    modal = await sb.wait_for(lambda: next(iter(sb.workspace.modals("U0CAROL")), None))
    shown = modal.to_slack()
    blocks = Block.parse_all(shown["blocks"])  # an unknown block or element parses to None
    assert [type(b).__name__ for b in blocks] == ["InputBlock", "InputBlock"]
    elements = [type(b.element).__name__ for b in blocks if isinstance(b, InputBlock)]
    assert elements == ["PlainTextInputElement", "StaticSelectElement"]
    assert [b.to_dict() for b in blocks] == shown["blocks"], "nothing slack-sdk does not know"
    assert shown["callback_id"] == "deny_reason" and shown["private_metadata"] == "int-1"
    assert shown["hash"] and shown["root_view_id"] == modal.id

    refused = await sb.interactions.submit_view("U0CAROL", view_id=modal.id, values={})
    assert refused is None, "the client does not submit an empty required field"
    assert set(sb.workspace.modals("U0CAROL")[-1].errors) == {"reason", "scope"}

    ack = await sb.interactions.submit_view(
        "U0CAROL", view_id=modal.id, values={"reason": {"text": "no"}, "scope": {"pick": "run"}}
    )
    assert ack is not None and ack.body is not None and ack.body["response_action"] == "errors"
    assert sb.workspace.modals("U0CAROL")[-1].errors == {"reason": "Say a little more."}
    state = submissions[0]["state"]["values"]
    assert state["scope"]["pick"]["selected_option"]["value"] == "run"
    assert submissions[0]["private_metadata"] == "int-1"

    await sb.interactions.submit_view(
        "U0CAROL",
        view_id=modal.id,
        values={"reason": {"text": "too risky today"}, "scope": {"pick": "always"}},
    )
    updated = sb.workspace.modals("U0CAROL")[-1]
    assert updated.id == modal.id and updated.spec["title"]["text"] == "Denied"
    assert updated.errors == {}

    await sb.interactions.close_view("U0CAROL", view_id=modal.id)
    assert sb.workspace.modals("U0CAROL") == []
    await sb.wait_for(lambda: closed)
    assert closed[0]["id"] == modal.id


async def test_trigger_id_is_single_use(sb: Sandbox, app: AsyncApp, serve: Serve) -> None:
    errors: list[str] = []

    @app.action("deny")
    async def open_twice(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=REASON_MODAL)
        try:
            await client.views_open(trigger_id=body["trigger_id"], view=REASON_MODAL)
        except SlackApiError as exc:
            errors.append(exc.response["error"])

    await serve(app)
    ts = await _post(sb)
    await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="deny")
    assert await sb.wait_for(lambda: errors) == ["expired_trigger_id"]


@pytest.mark.parametrize("timing", [Timing(trigger_ttl=0.05)], indirect=True)
async def test_trigger_id_expires(sb: Sandbox, app: AsyncApp, serve: Serve) -> None:
    errors: list[str] = []

    @app.action("deny")
    async def open_late(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await asyncio.sleep(0.1)  # the slow work before views.open that Slack punishes
        try:
            await client.views_open(trigger_id=body["trigger_id"], view=REASON_MODAL)
        except SlackApiError as exc:
            errors.append(exc.response["error"])

    await serve(app)
    ts = await _post(sb)
    await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="deny")
    assert await sb.wait_for(lambda: errors) == ["expired_trigger_id"]
    assert sb.workspace.modals("U0ALICE") == []
