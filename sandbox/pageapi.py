"""The JSON API behind the web page, also meant for scripted clients and tests.

Reads are per acting user (`?user=U...`), since ephemerals, modals and the Home tab are
private. Writes are the things a person does in the Slack client.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from .delivery import Ack
from .entities import JsonObject, View
from .errors import UserActionError
from .interactions import Interactions
from .workspace import Workspace

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LONG_POLL_SECONDS = 25.0


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str


class ClickBody(_Body):
    action_id: str
    block_id: str | None = None
    value: str | None = None
    ticked: dict[str, list[str]] = {}
    channel: str | None = None
    message_ts: str | None = None
    view_id: str | None = None


class SubmitBody(_Body):
    view_id: str
    values: dict[str, dict[str, str | list[str] | None]] = {}


class CloseBody(_Body):
    view_id: str


class CommandBody(_Body):
    channel: str
    command: str
    text: str = ""


class MessageBody(_Body):
    channel: str
    text: str
    thread_ts: str | None = None


class DismissBody(_Body):
    notice_id: str


def _ack_json(ack: Ack | None) -> JsonObject:
    return {"ack": ack.to_json() if ack else None}


def _view_json(view: View) -> JsonObject:
    return {**view.to_slack(), "errors": view.errors}


def _guard(handler: Handler) -> Handler:
    """Turn a bad request into a 400 with a message a person can act on."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except (UserActionError, ValidationError, json.JSONDecodeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)

    return wrapped


class PageApi:
    """Routes under `/ui/` over one workspace and its interactions."""

    def __init__(self, workspace: Workspace, interactions: Interactions) -> None:
        self._ws = workspace
        self._act = interactions

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/ui/workspace", _guard(self.workspace)),
            web.get("/ui/state", _guard(self.state)),
            web.get("/ui/channels/{channel}/messages", _guard(self.messages)),
            web.get("/ui/channels/{channel}/threads/{ts}", _guard(self.thread)),
            web.get("/ui/users/{user}/views", _guard(self.views)),
            web.get("/ui/users/{user}/notices", _guard(self.notices)),
            web.post("/ui/click", _guard(self.click)),
            web.post("/ui/views/submit", _guard(self.submit)),
            web.post("/ui/views/close", _guard(self.close)),
            web.post("/ui/command", _guard(self.command)),
            web.post("/ui/message", _guard(self.message)),
            web.post("/ui/home", _guard(self.home)),
            web.post("/ui/notices/dismiss", _guard(self.dismiss)),
        ]

    # -- reads -------------------------------------------------------------------

    def _user(self, request: web.Request) -> str:
        user = request.match_info.get("user") or request.query.get("user", "")
        return self._ws.require_user(user).id

    async def workspace(self, request: web.Request) -> web.Response:
        ws = self._ws
        return web.json_response(
            {
                "team": {"id": ws.team_id, "name": ws.team_name, "domain": ws.team_domain},
                "app": {
                    "id": ws.app.app_id,
                    "bot_user_id": ws.app.bot_user_id,
                    "name": ws.app.bot_name,
                    "commands": list(ws.app.commands),
                },
                "users": [u.to_slack() for u in ws.users.values()],
                "groups": [
                    {"id": g.id, "handle": g.handle, "name": g.name, "users": list(g.users)}
                    for g in ws.groups.values()
                ],
            }
        )

    def _channel_messages(self, user: str, channel: str) -> JsonObject:
        chan = self._ws.channels.get(channel)
        if chan is None or user not in chan.members:
            raise UserActionError(f"{user} cannot see channel {channel!r}")
        return {
            "channel": chan.to_slack() | {"title": self._ws.title(chan)},
            "messages": [self._ws.to_slack(m) for m in self._ws.history(channel)],
            "ephemerals": [e.to_slack() for e in self._ws.ephemerals(user, channel)],
        }

    def _views(self, user: str) -> JsonObject:
        home = self._ws.home(user)
        return {
            "modals": [_view_json(v) for v in self._ws.modals(user)],
            "home": _view_json(home) if home else None,
        }

    async def messages(self, request: web.Request) -> web.Response:
        user = self._user(request)
        return web.json_response(self._channel_messages(user, request.match_info["channel"]))

    async def thread(self, request: web.Request) -> web.Response:
        user = self._user(request)
        channel = request.match_info["channel"]
        self._channel_messages(user, channel)  # visibility check
        replies = self._ws.replies(channel, request.match_info["ts"])
        return web.json_response({"messages": [self._ws.to_slack(m) for m in replies]})

    async def views(self, request: web.Request) -> web.Response:
        return web.json_response(self._views(self._user(request)))

    async def notices(self, request: web.Request) -> web.Response:
        user = self._user(request)
        return web.json_response(
            {
                "notices": [
                    {"id": n.id, "text": n.text, "channel": n.channel}
                    for n in self._ws.notices(user)
                ]
            }
        )

    async def state(self, request: web.Request) -> web.Response:
        """Everything the page shows the acting user, after waiting for a change (`since`)."""
        user = self._user(request)
        since = int(request.query.get("since", "-1"))
        version = await self._ws.next_version(since, within=LONG_POLL_SECONDS)
        out: dict[str, Any] = {
            "version": version,
            "channels": [
                c.to_slack() | {"name": c.name, "title": self._ws.title(c)}
                for c in self._ws.channels_of(user)
            ],
            "notices": [
                {"id": n.id, "text": n.text, "channel": n.channel} for n in self._ws.notices(user)
            ],
            **self._views(user),
        }
        channel = request.query.get("channel")
        if channel:
            out.update(self._channel_messages(user, channel))
            thread = request.query.get("thread")
            if thread:
                out["thread"] = [self._ws.to_slack(m) for m in self._ws.replies(channel, thread)]
        return web.json_response(out)

    # -- writes ------------------------------------------------------------------

    async def click(self, request: web.Request) -> web.Response:
        body = ClickBody.model_validate(await request.json())
        if body.view_id:
            ack = await self._act.click_in_view(
                body.user,
                view_id=body.view_id,
                action_id=body.action_id,
                block_id=body.block_id,
                value=body.value,
            )
        elif body.channel and body.message_ts:
            ack = await self._act.click(
                body.user,
                channel=body.channel,
                message_ts=body.message_ts,
                action_id=body.action_id,
                block_id=body.block_id,
                value=body.value,
                ticked=body.ticked,
            )
        else:
            raise UserActionError("a click needs either view_id or channel and message_ts")
        return web.json_response(_ack_json(ack))

    async def submit(self, request: web.Request) -> web.Response:
        body = SubmitBody.model_validate(await request.json())
        ack = await self._act.submit_view(body.user, view_id=body.view_id, values=body.values)
        return web.json_response(_ack_json(ack) | self._views(body.user))

    async def close(self, request: web.Request) -> web.Response:
        body = CloseBody.model_validate(await request.json())
        return web.json_response(
            _ack_json(await self._act.close_view(body.user, view_id=body.view_id))
        )

    async def command(self, request: web.Request) -> web.Response:
        body = CommandBody.model_validate(await request.json())
        ack = await self._act.slash_command(
            body.user, channel=body.channel, command=body.command, text=body.text
        )
        return web.json_response(_ack_json(ack))

    async def message(self, request: web.Request) -> web.Response:
        body = MessageBody.model_validate(await request.json())
        message, ack = await self._act.post_message(
            body.user, channel=body.channel, text=body.text, thread_ts=body.thread_ts
        )
        return web.json_response({"ts": message.ts} | _ack_json(ack))

    async def home(self, request: web.Request) -> web.Response:
        body = _Body.model_validate(await request.json())
        return web.json_response(_ack_json(await self._act.open_home(body.user)))

    async def dismiss(self, request: web.Request) -> web.Response:
        body = DismissBody.model_validate(await request.json())
        self._ws.dismiss(body.user, body.notice_id)
        return web.json_response({"ok": True})
