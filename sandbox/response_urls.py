"""`response_url`s: where an app answers an interaction later (at most 5 times in 30 min)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from .blocks import checked_blocks
from .entities import Ephemeral, JsonObject, Message
from .errors import SlackApiFailure
from .ids import Ids
from .workspace import Workspace


class Reply(BaseModel):
    """What an app may send to a response URL, or in a slash command's ack body."""

    model_config = ConfigDict(extra="ignore")

    text: str = ""
    blocks: list[JsonObject] | None = None
    response_type: Literal["ephemeral", "in_channel"] | None = None
    replace_original: bool = False
    delete_original: bool = False
    thread_ts: str | None = None


@dataclass(kw_only=True)
class _Target:
    user: str
    channel: str
    message_ts: str | None
    ephemeral_id: str | None
    created: float
    uses: int = 0


class ResponseUrls:
    """Issues response URLs and applies what apps post to them."""

    def __init__(self, workspace: Workspace, *, ttl: float, max_uses: int) -> None:
        self.origin = ""  # set once the server listens
        self._ws = workspace
        self._ttl = ttl
        self._max_uses = max_uses
        self._targets: dict[str, _Target] = {}

    def issue(
        self,
        user_id: str,
        channel: str,
        *,
        message_ts: str | None = None,
        ephemeral_id: str | None = None,
    ) -> str:
        key = Ids.token()
        self._targets[key] = _Target(
            user=user_id,
            channel=channel,
            message_ts=message_ts,
            ephemeral_id=ephemeral_id,
            created=time.monotonic(),
        )
        return f"{self.origin}/response/{key}"

    async def handle(self, request: web.Request) -> web.Response:
        target = self._targets.get(request.match_info["key"])
        if target is None or time.monotonic() - target.created > self._ttl:
            return web.Response(status=404, text="expired_url")
        if target.uses >= self._max_uses:
            return web.Response(status=404, text="used_url")
        target.uses += 1
        try:
            reply = Reply.model_validate_json(await request.read())
            self.apply(
                reply,
                user_id=target.user,
                channel=target.channel,
                message_ts=target.message_ts,
                ephemeral_id=target.ephemeral_id,
            )
        except ValidationError:
            return web.Response(status=400, text="invalid_payload")
        except SlackApiFailure as exc:
            return web.Response(status=400, text=exc.code)
        return web.Response(text="ok")

    def apply(
        self,
        reply: Reply,
        *,
        user_id: str,
        channel: str,
        message_ts: str | None = None,
        ephemeral_id: str | None = None,
    ) -> None:
        """Replace, delete or add a message as Slack does for a response URL reply."""
        blocks = checked_blocks(reply.blocks, surface="message") if reply.blocks else ()
        original = self._ws.message(channel, message_ts) if message_ts else None
        ephemeral = self._ws.find_ephemeral(ephemeral_id) if ephemeral_id else None
        if reply.delete_original:
            if original is not None:
                self._ws.delete(original)
            if ephemeral is not None:
                self._ws.delete_ephemeral(ephemeral)
            return
        if reply.replace_original and (original or ephemeral):
            if original is not None:
                self._ws.replace(
                    original, text=reply.text, blocks=blocks, edited_ts=self._ws.ids.ts()
                )
            if ephemeral is not None:
                self._ws.replace_ephemeral(ephemeral, text=reply.text, blocks=blocks)
            return
        app = self._ws.app
        thread_ts = reply.thread_ts or (original.thread_ts if original else None)
        if reply.response_type == "in_channel":
            self._ws.post(
                Message(
                    channel=channel,
                    ts=self._ws.ids.ts(),
                    user=app.bot_user_id,
                    text=reply.text,
                    blocks=blocks,
                    thread_ts=thread_ts,
                    bot_id=app.bot_id,
                    app_id=app.app_id,
                    team=self._ws.team_id,
                )
            )
        else:
            self._ws.add_ephemeral(
                Ephemeral(
                    id=self._ws.ids.ts(),
                    channel=channel,
                    user=user_id,
                    text=reply.text,
                    blocks=blocks,
                    thread_ts=thread_ts,
                    sender=app.bot_user_id,
                )
            )
