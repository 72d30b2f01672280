"""Deliveries to a real Bolt app over HTTP: signed, shaped as Slack sends them, acked in 3 s."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox, Timing

Serve = Callable[[AsyncApp], Awaitable[str]]  # the `serve` fixture in conftest.py

APPROVAL = [
    {
        "type": "section",
        "block_id": "what",
        "text": {"type": "mrkdwn", "text": "Delete `/tmp/scratch`?"},
    },
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "value": "int-1",
                "style": "primary",
                "text": {"type": "plain_text", "text": "Approve"},
                "confirm": {
                    "title": {"type": "plain_text", "text": "Sure?"},
                    "text": {"type": "plain_text", "text": "Files go away."},
                    "confirm": {"type": "plain_text", "text": "Yes"},
                    "deny": {"type": "plain_text", "text": "No"},
                },
            },
            {
                "type": "button",
                "action_id": "deny",
                "value": "int-1",
                "style": "danger",
                "text": {"type": "plain_text", "text": "Deny"},
            },
        ],
    },
]


# Events are retried at once (Slack: after 1 s), so "never retried" is seen without waiting.
QUICK_RETRIES = Timing(event_retry_delays=(0.05, 0.05, 0.05))


async def _past_any_retry(sb: Sandbox) -> None:
    """Return once an event sent now, which the app refuses, has come back as a retry.

    Retries wait the same delays whatever they retry, so a retry of anything delivered
    before this event would already have reached the app.
    """
    bot = sb.workspace.app.bot_user_id
    _, ack = await sb.interactions.post_message(
        "U0DAVE", channel="C0GENERAL", text=f"<@{bot}> no listener handles this"
    )
    assert ack is not None and ack.status == "failed", "the app must refuse the event"
    await sb.wait_for(lambda: any(out.retry_num for out, _ in sb.deliveries))


def _interactive(sb: Sandbox) -> list[str]:
    return [ack.status for out, ack in sb.deliveries if out.kind == "interactive"]


async def _post(sb: Sandbox, blocks: list[dict[str, Any]] = APPROVAL) -> str:
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    return str(
        (await client.chat_postMessage(channel="C0OPS", text="approve?", blocks=blocks))["ts"]
    )


async def test_click_reaches_bolt_signed_and_shaped_like_slack(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    seen: list[dict[str, Any]] = []

    @app.action("approve")
    async def on_approve(ack: AsyncAck, body: dict[str, Any], context: Any) -> None:
        await ack()
        seen.append({"body": body, "user_id": context.user_id, "channel_id": context.channel_id})

    await serve(app)
    ts = await _post(sb)
    ack = await sb.interactions.click(
        "U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve"
    )
    assert ack.status == "acked"
    await sb.wait_for(lambda: seen)
    body = seen[0]["body"]
    assert seen[0]["user_id"] == "U0ALICE" and seen[0]["channel_id"] == "C0OPS"
    assert body["type"] == "block_actions"
    assert body["container"] == {
        "type": "message",
        "message_ts": ts,
        "channel_id": "C0OPS",
        "is_ephemeral": False,
    }
    assert body["channel"]["id"] == "C0OPS"
    assert body["message"]["ts"] == ts
    assert body["actions"][0]["value"] == "int-1" and body["actions"][0]["block_id"] == "decide"
    assert body["trigger_id"] and body["response_url"].startswith(sb.base_url)
    blocks = Block.parse_all(body["message"]["blocks"])
    assert [type(b).__name__ for b in blocks] == ["SectionBlock", "ActionsBlock"]


async def test_wrong_signing_secret_is_refused_by_bolt(sb: Sandbox, serve: Serve) -> None:
    other = AsyncApp(
        client=AsyncWebClient(base_url=sb.api_url, token=sb.bot_token),
        signing_secret="not-the-sandbox-secret",
    )
    clicked: list[str] = []

    @other.action("approve")
    async def on_approve(ack: AsyncAck) -> None:
        await ack()
        clicked.append("yes")

    await serve(other)
    ts = await _post(sb)
    ack = await sb.interactions.click(
        "U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve"
    )
    assert ack.status == "failed" and ack.detail == "HTTP 401"
    assert clicked == []
    assert "failed" in sb.workspace.notices("U0ALICE")[0].text


@pytest.mark.parametrize("timing", [QUICK_RETRIES], indirect=True)
async def test_no_ack_in_three_seconds_times_out_and_is_not_redelivered(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    calls: list[str] = []

    @app.action("approve")
    async def never_acks(body: dict[str, Any]) -> None:
        calls.append(body["actions"][0]["action_id"])
        await asyncio.sleep(5)

    await serve(app)
    ts = await _post(sb)
    ack = await sb.interactions.click("U0BOB", channel="C0OPS", message_ts=ts, action_id="approve")
    assert ack.status == "timed_out"
    assert 2.9 < ack.seconds < 4.5  # Slack's 3 s, not the handler's 5 s; room for a busy machine
    notices = sb.workspace.notices("U0BOB")
    assert len(notices) == 1 and "Operation timed out" in notices[0].text
    await _past_any_retry(sb)
    assert calls == ["approve"], "the click reached the app once"
    assert _interactive(sb) == ["timed_out"]


@pytest.mark.parametrize("timing", [Timing(ack_timeout=0.3)], indirect=True)
async def test_late_ack_counts_as_timed_out(sb: Sandbox, serve: Serve) -> None:
    slow = AsyncApp(
        client=AsyncWebClient(base_url=sb.api_url, token=sb.bot_token),
        signing_secret=sb.signing_secret,
        process_before_response=True,
    )

    @slow.action("approve")
    async def acks_late(ack: AsyncAck) -> None:
        await asyncio.sleep(0.6)
        await ack()

    await serve(slow)
    ts = await _post(sb)
    ack = await sb.interactions.click("U0BOB", channel="C0OPS", message_ts=ts, action_id="approve")
    assert ack.status == "timed_out"
    assert "Operation timed out" in sb.workspace.notices("U0BOB")[0].text


async def test_slash_command_ack_text_is_an_ephemeral_reply(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    commands: list[dict[str, Any]] = []

    @app.command("/approvals")
    async def on_command(ack: AsyncAck, command: dict[str, Any]) -> None:
        commands.append(command)
        await ack("Nothing is waiting for you.")

    await serve(app)
    ack = await sb.interactions.slash_command(
        "U0DAVE", channel="C0GENERAL", command="/approvals", text="mine"
    )
    assert ack.status == "acked"
    assert commands[0]["user_id"] == "U0DAVE" and commands[0]["text"] == "mine"
    assert commands[0]["channel_id"] == "C0GENERAL" and commands[0]["trigger_id"]
    replies = sb.workspace.ephemerals("U0DAVE", "C0GENERAL")
    assert [r.text for r in replies] == ["Nothing is waiting for you."]


async def test_respond_through_the_response_url(sb: Sandbox, app: AsyncApp, serve: Serve) -> None:
    @app.action("approve")
    async def on_approve(ack: AsyncAck, respond: AsyncRespond) -> None:
        await ack()
        await respond(text="Approved by <@U0ALICE>", replace_original=True)

    await serve(app)
    ts = await _post(sb)
    await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve")
    message = await sb.wait_for(
        lambda: (m := sb.workspace.message("C0OPS", ts)) and m.text.startswith("Approved") and m
    )
    assert message.blocks == ()


async def test_mention_and_home_opened_events(sb: Sandbox, app: AsyncApp, serve: Serve) -> None:
    events: list[dict[str, Any]] = []

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        events.append(event)

    @app.event("app_home_opened")
    async def on_home(event: dict[str, Any], client: AsyncWebClient) -> None:
        events.append(event)
        await client.views_publish(
            user_id=event["user"],
            view={
                "type": "home",
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "2 waiting"}}],
            },
        )

    await serve(app)
    bot = sb.workspace.app.bot_user_id
    _, ack = await sb.interactions.post_message(
        "U0BOB", channel="C0OPS", text=f"<@{bot}> clean up /tmp"
    )
    assert ack is not None and ack.status == "acked"
    assert (await sb.interactions.open_home("U0BOB")).status == "acked"
    home = await sb.wait_for(lambda: sb.workspace.home("U0BOB"))
    assert home.spec["blocks"][0]["text"]["text"] == "2 waiting"
    assert [e["type"] for e in events] == ["app_mention", "app_home_opened"]
    assert events[0]["text"].endswith("clean up /tmp") and events[0]["channel"] == "C0OPS"
    assert events[1]["channel"].startswith("D") and events[1]["tab"] == "home"


async def test_invite_sends_member_joined_channel_for_the_apps_bot_user(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    """``/invite @Signoff`` delivers Slack's signed ``member_joined_channel`` event (Bolt
    checks the signature); inviting an app already there sends none."""
    joined: list[dict[str, Any]] = []

    @app.event("member_joined_channel")
    async def on_joined(event: dict[str, Any]) -> None:
        joined.append(event)

    await serve(app)
    for _ in range(2):
        ack = await sb.interactions.slash_command(
            "U0ALICE", channel="C0RANDOM", command="/invite", text="@Signoff"
        )
        assert ack.status == "acked"
    [event] = await sb.wait_for(lambda: joined)
    assert event == {
        "type": "member_joined_channel",
        "user": sb.workspace.app.bot_user_id,
        "channel": "C0RANDOM",
        "channel_type": "C",
        "team": sb.workspace.team_id,
        "inviter": "U0ALICE",
    }
    events = [out for out, _ in sb.deliveries if out.kind == "events_api"]
    assert [out.payload["event"]["type"] for out in events] == ["member_joined_channel"]


async def test_without_an_app_the_user_is_told(sb: Sandbox) -> None:
    ts = await _post(sb)
    ack = await sb.interactions.click(
        "U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve"
    )
    assert ack.status == "no_app"
    assert "not connected" in sb.workspace.notices("U0ALICE")[0].text


@pytest.mark.parametrize(
    "timing", [Timing(ack_timeout=0.2, event_retry_delays=(0.0, 0.0, 0.0))], indirect=True
)
async def test_a_lost_event_is_retried_with_slack_retry_headers(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    seen: list[tuple[str | None, str | None]] = []

    @app.event("app_mention")
    async def on_mention(request: Any) -> None:
        seen.append(
            (
                request.headers.get("x-slack-retry-num", [None])[0],
                request.headers.get("x-slack-retry-reason", [None])[0],
            )
        )

    await serve(app)
    sb.faults.drop_deliveries(1)
    bot = sb.workspace.app.bot_user_id
    _, ack = await sb.interactions.post_message("U0BOB", channel="C0OPS", text=f"<@{bot}> hi")
    assert ack is not None and ack.status == "timed_out"
    assert await sb.wait_for(lambda: seen) == [("1", "timeout")]
    assert [a.status for _, a in sb.deliveries] == ["timed_out", "acked"]
    assert sb.deliveries[1][0].retry_num == 1


@pytest.mark.parametrize("timing", [QUICK_RETRIES], indirect=True)
async def test_a_failed_click_is_never_retried(sb: Sandbox, serve: Serve) -> None:
    other = AsyncApp(
        client=AsyncWebClient(base_url=sb.api_url, token=sb.bot_token), signing_secret="wrong"
    )
    await serve(other)
    ts = await _post(sb)
    ack = await sb.interactions.click(
        "U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve"
    )
    assert ack.status == "failed" and ack.reason == "http_error"
    await _past_any_retry(sb)
    assert _interactive(sb) == ["failed"]


async def test_redelivery_replays_the_same_signed_click(
    sb: Sandbox, app: AsyncApp, serve: Serve
) -> None:
    seen: list[dict[str, Any]] = []

    @app.action("approve")
    async def on_approve(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        seen.append(body)

    await serve(app)
    ts = await _post(sb)
    await sb.interactions.click("U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve")
    assert (await sb.redeliver()).status == "acked", "Bolt accepts a replay: apps must dedupe"
    await sb.wait_for(lambda: len(seen) == 2)
    assert seen[0]["trigger_id"] == seen[1]["trigger_id"]
    assert seen[0]["actions"] == seen[1]["actions"]
