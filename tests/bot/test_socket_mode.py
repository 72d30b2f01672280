"""The approve flow over Socket Mode, through a local endpoint (issue 4, test 12)."""

from __future__ import annotations

from typing import Any

from fakes import click_payload
from harness import ALICE, CHANNEL, Harness
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot import ids
from bot.app import build_app


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
