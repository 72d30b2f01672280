"""`/api/<method>`: authentication, injected faults, the call log, Slack's error shapes."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from aiohttp import web
from pydantic import ValidationError

from ..entities import JsonObject
from ..errors import SlackApiFailure
from ..faults import Faults
from . import args, chat, directory, history, views
from .context import ApiContext

log = logging.getLogger(__name__)

A = TypeVar("A", bound=args.Args)


@dataclass(frozen=True)
class Method(Generic[A]):
    """One Web API method: its arguments, its implementation and the token type it takes."""

    args: type[A]
    run: Callable[[ApiContext, A], JsonObject]
    token: Literal["bot", "app"] = "bot"


METHODS: dict[str, Method[Any]] = {
    "auth.test": Method(args.NoArgs, directory.auth_test),
    "chat.postMessage": Method(args.PostMessage, chat.post_message),
    "chat.update": Method(args.Update, chat.update),
    "chat.postEphemeral": Method(args.PostEphemeral, chat.post_ephemeral),
    "chat.getPermalink": Method(args.GetPermalink, chat.get_permalink),
    "views.open": Method(args.ViewsOpen, views.open_view),
    "views.push": Method(args.ViewsOpen, views.push_view),
    "views.update": Method(args.ViewsUpdate, views.update_view),
    "views.publish": Method(args.ViewsPublish, views.publish),
    "users.info": Method(args.UsersInfo, directory.users_info),
    "usergroups.list": Method(args.NoArgs, directory.usergroups_list),
    "usergroups.users.list": Method(args.UsergroupUsers, directory.usergroup_users),
    "conversations.open": Method(args.ConversationsOpen, directory.conversations_open),
    "users.conversations": Method(args.UsersConversations, directory.users_conversations),
    "conversations.history": Method(args.ConversationsHistory, history.conversations_history),
    "conversations.replies": Method(args.ConversationsReplies, history.conversations_replies),
    "apps.connections.open": Method(args.NoArgs, directory.connections_open, token="app"),
}


async def _read_args(request: web.Request) -> JsonObject:
    raw: JsonObject = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            body = await request.json()
            if not isinstance(body, dict):
                raise SlackApiFailure("invalid_json")
            raw.update(body)
        else:
            raw.update(dict(await request.post()))
    return raw


def _token(request: web.Request, raw: JsonObject) -> str | None:
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip()
    token = raw.pop("token", None)
    return str(token) if token else None


class WebApi:
    """Serves the Web API for one workspace; `context` gives each call its ApiContext."""

    def __init__(self, *, context: Callable[[web.Request], ApiContext], faults: Faults) -> None:
        self._context = context
        self._faults = faults

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        status, headers = 200, {}
        try:
            raw = await _read_args(request)
        except (json.JSONDecodeError, SlackApiFailure):
            raw = {}
        token = _token(request, raw)
        try:
            body = {"ok": True, **await self._call(request, name, token, raw)}
        except SlackApiFailure as exc:
            body, status, headers = {"ok": False, "error": exc.code}, exc.status, exc.headers
            if exc.messages:
                body["response_metadata"] = {"messages": exc.messages}
        self._faults.record(name, raw, status=status, error=None if body["ok"] else body["error"])
        if not body["ok"]:
            log.info("%s -> %s (HTTP %d)", name, body["error"], status)
        return web.json_response(body, status=status, headers=headers)

    async def _call(
        self, request: web.Request, name: str, token: str | None, raw: JsonObject
    ) -> JsonObject:
        method = METHODS.get(name)
        if method is None:
            raise SlackApiFailure("unknown_method")
        ctx = self._context(request)
        self._authenticate(ctx, method, token)
        fault = self._faults.take(name)
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.ratelimit_after is not None:
            raise SlackApiFailure(
                "ratelimited", status=429, headers={"Retry-After": str(fault.ratelimit_after)}
            )
        if fault.server_error is not None:
            raise SlackApiFailure("internal_error", status=fault.server_error)
        try:
            parsed = method.args.model_validate(raw)
        except ValidationError as exc:
            raise SlackApiFailure("invalid_arguments") from exc
        return method.run(ctx, parsed)

    @staticmethod
    def _authenticate(ctx: ApiContext, method: Method[Any], token: str | None) -> None:
        app = ctx.workspace.app
        if not token:
            raise SlackApiFailure("not_authed")
        if token not in (app.bot_token, app.app_token):
            raise SlackApiFailure("invalid_auth")
        if token != (app.app_token if method.token == "app" else app.bot_token):
            raise SlackApiFailure("not_allowed_token_type")
