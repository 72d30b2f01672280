"""The bot answering Slack over Socket Mode, as ``signoff socket`` runs it: the fake
Slack sends its envelopes over a real local WebSocket to slack-sdk's own client, and
the tests read the acks that come back."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from fakes import click_payload, command_body, event_body
from harness import CHANNEL, Harness

from bot.slack.app import build_app
from bot.slack.socket_mode import TimedSocketModeHandler


class SocketBot:
    """``bot`` taking Slack's envelopes over Socket Mode (``connect`` first)."""

    def __init__(self, bot: Harness) -> None:
        self.bot = bot
        self.handler = TimedSocketModeHandler(
            build_app(bot.services, signing_secret=None),
            "xapp-test-token",
            web_client=bot.services.client,
            acks=bot.services.metrics.ack,
            deliveries=bot.services.storage.deliveries,
        )

    async def connect(self) -> None:
        await self.handler.connect_async()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        await self.handler.close_async()  # type: ignore[no-untyped-call]

    async def command(self, text: str, *, user: str) -> dict[str, Any]:
        """``/signoff <text>``; the reply its ack carries."""
        body = command_body(text=text, user=user, channel=CHANNEL)
        payload = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
        return await self.interact(payload, kind="slash_commands")

    async def click(self, action_id: str, value: str, *, user: str, index: int = 0) -> None:
        """Click a button on the ``index``-th card posted."""
        ts = self.bot.message_ts(index)
        payload = click_payload(
            action_id=action_id, value=value, user=user, channel=CHANNEL, message_ts=ts
        )
        assert await self.interact(payload) == {}

    async def interact(
        self, payload: dict[str, Any], *, kind: str = "interactive"
    ) -> dict[str, Any]:
        """Send ``payload`` in an envelope; what the ack answered (empty for a bare ack)."""
        envelope = await self.bot.slack.deliver(payload, kind=kind)
        return dict((await self.bot.slack.acked(envelope)).get("payload") or {})

    async def event(self, event: dict[str, Any], *, event_id: str, retry: int = 0) -> None:
        """Deliver an Events API event (``retry`` > 0: Slack's retry), and wait for its ack."""
        body = json.loads(event_body(event, event_id=event_id))
        envelope = await self.bot.slack.deliver(body, kind="events_api", retry=retry)
        await self.bot.slack.acked(envelope)
