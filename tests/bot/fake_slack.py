"""A local Slack Web API for the bot's tests: answers like Slack for the methods the bot
uses, records every call, and serves scripted faults and outages."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

BOT_TOKEN = "xoxb-test-token"
BOT_USER = "UBOT0001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    answer: dict[str, Any] = field(default_factory=dict)


@dataclass
class Fault:
    """One scripted answer that replaces the next normal one: a status, headers, a body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"ok": False, "error": "fault"})


BAD_GATEWAY = Fault(status=502, body={"ok": False, "error": "bad_gateway"})
"""Slack's answer while it is down for a moment: the client does not retry it."""


class FakeSlack:
    """A local Slack Web API: answers like Slack for the methods the bot uses, records calls.

    ``faults[method]`` is a queue of answers served before the normal one (429, 500, ...);
    ``down`` makes every call answer 502 (an outage the client does not retry) until
    cleared. ``calls`` holds the calls answered normally, ``failed`` those that faulted.
    """

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.failed: list[Call] = []
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.down = False
        self.users: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, list[str]] = {}
        self.handles: dict[str, str] = {}
        """Group id -> handle (without the @) for usergroups.list; default: the id lowercased."""
        self.channels_of: dict[str, list[str]] = {}
        """The channels each user is in, for ``users.conversations``."""
        self.not_in: set[str] = set()
        """Channels the app is not a member of: posts there answer ``not_in_channel``."""
        self.most_block_text: int | None = None
        """When set, a post or update whose blocks hold more text than this answers
        ``msg_blocks_too_long``, as Slack does past its (undocumented) total."""
        self.after: dict[str, Callable[[], object]] = {}
        """Run once, just after a method is answered normally: what happens next, staged."""
        self.held: dict[str, asyncio.Event] = {}
        """Methods answered only once their event is set: a Slack slow to answer them."""
        self.sockets: list[web.WebSocketResponse] = []
        self.socket_acks: list[dict[str, Any]] = []
        self.ticket = 0
        """The latest Socket Mode address handed out; only it connects."""
        self._ts = itertools.count(1)
        self._changed = asyncio.Condition()
        self.server: TestServer | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/api/{method}", self._handle)
        app.router.add_get("/socket", self._socket)
        app.router.add_post("/response", self._response)
        self.server = TestServer(app, host="127.0.0.1", port=0)
        await self.server.start_server()
        return self.api_url

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    @property
    def api_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/api/"

    @property
    def response_url(self) -> str:
        """A ``response_url`` for interactions: what the app sends there is a call of
        ``response_url``."""
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/response"

    async def _response(self, request: web.Request) -> web.Response:
        self.calls.append(Call(method="response_url", args=await request.json()))
        await self.notify()
        return web.Response(text="ok")

    # -- Socket Mode -------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("ticket") != str(self.ticket):
            return web.Response(status=404)  # an address Slack handed out earlier: expired
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.sockets.append(ws)
        await ws.send_json({"type": "hello", "num_connections": len(self.sockets)})
        await self.notify()
        async for message in ws:
            if message.type.name == "TEXT":
                self.socket_acks.append(json.loads(message.data))
                await self.notify()
        return ws

    async def deliver(
        self,
        payload: dict[str, Any],
        *,
        kind: str = "interactive",
        retry: int = 0,
        envelope_id: str | None = None,
        socket: int = -1,
    ) -> str:
        """Send an envelope over the latest Socket Mode connection (or the ``socket``-th
        opened); its envelope id. ``retry`` > 0 sends it as Slack's retry of an event (a new
        envelope, the same payload); ``envelope_id`` sends an envelope sent before again."""
        await self.wait_for(lambda: bool(self.sockets), what="a Socket Mode connection")
        envelope_id = f"env-{next(self._ts)}" if envelope_id is None else envelope_id
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": retry,
            "retry_reason": "timeout" if retry else "",
        }
        await self.sockets[socket].send_json(envelope)
        return envelope_id

    async def acked(self, envelope_id: str) -> dict[str, Any]:
        """The ack of envelope ``envelope_id``, once it came: its ``payload`` is what the app
        answered (a command's reply, a modal's errors), absent for a bare ack."""
        await self.wait_for(
            lambda: any(a.get("envelope_id") == envelope_id for a in self.socket_acks),
            what=f"the ack of {envelope_id}",
        )
        return next(a for a in self.socket_acks if a.get("envelope_id") == envelope_id)

    # -- what tests look at ------------------------------------------------------------

    def add_user(
        self, user_id: str, *, tz: str = "Europe/London", offset: int = 0, deleted: bool = False
    ) -> None:
        """A user ``users.info`` tells of; ``deleted``: deactivated (Slack keeps the account)."""
        self.users[user_id] = {
            "id": user_id,
            "name": user_id.lower(),
            "deleted": deleted,
            "tz": tz,
            "tz_label": tz,
            "tz_offset": offset,
        }

    def called(self, method: str) -> list[dict[str, Any]]:
        """The arguments of every successful call of ``method``, in order."""
        return [c.args for c in self.calls if c.method == method]

    def answers(self, method: str) -> list[dict[str, Any]]:
        return [c.answer for c in self.calls if c.method == method]

    async def wait_for(
        self, predicate: Callable[[], bool], *, within: float = 5.0, what: str = "condition"
    ) -> None:
        """Wait until ``predicate()`` holds after some call, or fail after ``within`` seconds."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(predicate), within)
            except TimeoutError:
                raise AssertionError(f"timed out waiting for {what}; calls: {self.calls}") from None

    async def wait_calls(self, method: str, count: int = 1, *, within: float = 5.0) -> None:
        await self.wait_for(
            lambda: len(self.called(method)) >= count,
            within=within,
            what=f"{count} {method} call(s)",
        )

    async def notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- the Web API -------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.headers.get("Authorization") != f"Bearer {BOT_TOKEN}" and method != (
            "apps.connections.open"
        ):
            return web.json_response({"ok": False, "error": "invalid_auth"})
        args = await _read_args(request)
        call = Call(method=method, args=args)
        if (release := self.held.get(method)) is not None:
            await release.wait()
        try:
            if self.down:
                self.failed.append(call)
                return web.json_response({"ok": False, "error": "down"}, status=502)
            if method == "chat.postMessage" and args.get("channel") in self.not_in:
                self.failed.append(call)
                return web.json_response({"ok": False, "error": "not_in_channel"})
            most = self.most_block_text
            if method in _MESSAGES and most is not None and _text_length(args.get("blocks")) > most:
                self.failed.append(call)
                return web.json_response({"ok": False, "error": "msg_blocks_too_long"})
            if self.faults[method]:
                fault = self.faults[method].popleft()
                self.failed.append(call)
                return web.json_response(fault.body, status=fault.status, headers=fault.headers)
            call.answer = self._answer(method, args)
            self.calls.append(call)
            if (then := self.after.pop(method, None)) is not None:
                then()
            return web.json_response(call.answer)
        finally:
            await self.notify()

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://fake.slack.test/",
                "user_id": BOT_USER,
                "team_id": "T0TEST",
                "bot_id": "B0TEST",
            }
        if method == "chat.postMessage":
            ts = f"{1_700_000_000 + next(self._ts)}.000100"
            return {"ok": True, "channel": args.get("channel"), "ts": ts, "message": args}
        if method in ("conversations.history", "conversations.replies"):
            return self._history(args, thread=method == "conversations.replies")
        if method == "chat.update":
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "chat.getPermalink":
            ts = str(args.get("message_ts", "")).replace(".", "")
            link = f"https://fake.slack.test/archives/{args.get('channel')}/p{ts}"
            return {"ok": True, "channel": args.get("channel"), "permalink": link}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{time.time():.6f}"}
        if method in ("views.open", "views.publish", "views.update"):
            return {"ok": True, "view": {"id": "V0TEST", **_as_dict(args.get("view"))}}
        if method == "users.info":
            user = self.users.get(str(args.get("user")))
            return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
        if method == "usergroups.list":
            groups = [{"id": g, "handle": self.handles.get(g, g.lower())} for g in self.groups]
            return {"ok": True, "usergroups": groups}
        if method == "usergroups.users.list":
            group = self.groups.get(str(args.get("usergroup")))
            if group is None:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": group}
        if method == "conversations.open":
            return _open_conversation(str(args.get("users", "")))
        if method == "users.conversations":  # paged as Slack does, by an opaque cursor
            channels = self.channels_of.get(str(args.get("user")), [])
            start, size = int(args.get("cursor") or 0), int(args.get("limit") or 100)
            more = str(start + size) if start + size < len(channels) else ""
            page = [{"id": c} for c in channels[start : start + size]]
            return {"ok": True, "channels": page, "response_metadata": {"next_cursor": more}}
        if method == "apps.connections.open":
            assert self.server is not None
            self.ticket += 1
            return {
                "ok": True,
                "url": f"ws://127.0.0.1:{self.server.port}/socket?ticket={self.ticket}",
            }
        return {"ok": False, "error": "unknown_method"}

    def _history(self, args: dict[str, Any], *, thread: bool) -> dict[str, Any]:
        """A channel's messages (or a thread's), newest first, paged by an opaque cursor;
        their metadata only when asked with ``include_all_metadata``, as Slack does. The
        fake's ts count posts rather than time, so ``oldest`` is not applied."""
        channel, parent = args.get("channel"), args.get("ts")
        with_meta = str(args.get("include_all_metadata")).lower() in ("1", "true")
        posted = [c.answer for c in self.calls if c.method == "chat.postMessage"]
        messages = []
        for answer in reversed(posted):
            sent = answer["message"]
            where = sent.get("thread_ts") or None
            if answer["channel"] != channel or where != (parent if thread else None):
                continue
            message = {"type": "message", "ts": answer["ts"], "text": sent.get("text", "")}
            if with_meta and sent.get("metadata"):
                message["metadata"] = _as_dict(sent["metadata"])
            messages.append(message)
        start, size = int(args.get("cursor") or 0), int(args.get("limit") or 100)
        more = str(start + size) if start + size < len(messages) else ""
        page = messages[start : start + size]
        return {"ok": True, "messages": page, "response_metadata": {"next_cursor": more}}


_MESSAGES = ("chat.postMessage", "chat.update")


def _text_length(value: Any) -> int:
    """How much text Block Kit ``value`` holds: every ``text`` string in it, added up."""
    if isinstance(value, list):
        return sum(_text_length(v) for v in value)
    if isinstance(value, dict):
        own = len(value["text"]) if isinstance(value.get("text"), str) else 0
        return own + sum(_text_length(v) for v in value.values())
    return 0


def _open_conversation(users: str) -> dict[str, Any]:
    """``conversations.open``: a DM (``D...``) for one user, a group DM (``G...``) for 2-8."""
    ids = [u for u in users.split(",") if u]
    if not ids:
        return {"ok": False, "error": "users_list_not_supplied"}
    if len(ids) > 8:
        return {"ok": False, "error": "too_many_users"}
    if len(ids) == 1:
        return {"ok": True, "channel": {"id": "D" + ids[0][1:]}}
    digest = hashlib.sha256(",".join(sorted(ids)).encode()).hexdigest()[:9].upper()
    return {"ok": True, "channel": {"id": "G" + digest, "is_mpim": True}}


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return dict(json.loads(value))
    return dict(value or {})


async def _read_args(request: web.Request) -> dict[str, Any]:
    """The call's arguments: slack-sdk sends some methods' (``params=``) in the query string."""
    args: dict[str, Any] = dict(request.query)
    if request.method == "GET":
        return args
    if request.content_type == "application/json":
        return {**args, **(await request.json())}
    form = await request.post()
    for key, value in form.items():
        text = str(value)
        if key in ("blocks", "view", "attachments"):
            try:
                args[key] = json.loads(text)
                continue
            except json.JSONDecodeError:
                pass
        args[key] = text
    return args
