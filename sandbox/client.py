"""`SandboxClient`: drive a running sandbox over HTTP as its members, from scripts and tests.

It uses the same JSON API as the page, so a scripted run exercises what a person would
click. Waiting is long polling on `/ui/state`, never sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import aiohttp

from .entities import JsonObject
from .errors import SandboxError, UserActionError

_T = TypeVar("_T")
Values = Mapping[str, Mapping[str, str | Sequence[str] | None]]


class SandboxClient:
    """A scripted Slack client for one sandbox at `base_url` (e.g. `http://127.0.0.1:8123`)."""

    def __init__(self, base_url: str) -> None:
        self._session = aiohttp.ClientSession(base_url=base_url.rstrip("/"))

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> SandboxClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _call(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None
    ) -> JsonObject:
        async with self._session.request(method, path, json=json, params=params) as response:
            body: JsonObject = await response.json()
            if response.status == 400:
                raise UserActionError(str(body.get("error")))
            if response.status != 200:
                raise SandboxError(f"{method} {path} answered HTTP {response.status}: {body}")
            return body

    # -- reading -------------------------------------------------------------------

    async def state(
        self, user: str, *, channel: str | None = None, thread: str | None = None, since: int = -1
    ) -> JsonObject:
        """What `user` sees: channels, `channel`'s messages and ephemerals, modals, Home."""
        params = {"user": user, "since": str(since)}
        if channel:
            params["channel"] = channel
        if thread:
            params["thread"] = thread
        return await self._call("GET", "/ui/state", params=params)

    async def messages(self, user: str, channel: str) -> list[JsonObject]:
        """Top-level messages of `channel`, oldest first, in Slack's message shape."""
        return list((await self.state(user, channel=channel))["messages"])

    async def wait_for(
        self,
        user: str,
        probe: Callable[[JsonObject], _T | None],
        *,
        channel: str | None = None,
        thread: str | None = None,
        within: float = 10.0,
    ) -> _T:
        """Long-poll `user`'s state until `probe(state)` returns something truthy."""
        since = -1
        async with asyncio.timeout(within):
            while True:
                state = await self.state(user, channel=channel, thread=thread, since=since)
                result = probe(state)
                if result:
                    return result
                since = int(state["version"])

    # -- acting ----------------------------------------------------------------------

    async def click(
        self,
        user: str,
        *,
        channel: str,
        message_ts: str,
        action_id: str,
        block_id: str | None = None,
        value: str | None = None,
    ) -> JsonObject:
        """Click a button in a message; returns the app's ack (`status`, `body`, ...)."""
        body = {
            "user": user,
            "channel": channel,
            "message_ts": message_ts,
            "action_id": action_id,
            "block_id": block_id,
            "value": value,
        }
        return dict((await self._call("POST", "/ui/click", json=body))["ack"])

    async def click_in_view(
        self,
        user: str,
        *,
        view_id: str,
        action_id: str,
        block_id: str | None = None,
        value: str | None = None,
    ) -> JsonObject:
        """Click a button in a modal or the Home tab."""
        body = {
            "user": user,
            "view_id": view_id,
            "action_id": action_id,
            "block_id": block_id,
            "value": value,
        }
        return dict((await self._call("POST", "/ui/click", json=body))["ack"])

    async def submit_view(self, user: str, *, view_id: str, values: Values) -> JsonObject:
        """Submit the modal on top; returns `{ack, modals, home}` after the app answered."""
        body = {"user": user, "view_id": view_id, "values": values}
        return await self._call("POST", "/ui/views/submit", json=body)

    async def close_view(self, user: str, *, view_id: str) -> None:
        await self._call("POST", "/ui/views/close", json={"user": user, "view_id": view_id})

    async def command(self, user: str, *, channel: str, command: str, text: str = "") -> JsonObject:
        """Run a slash command; returns the app's ack."""
        body = {"user": user, "channel": channel, "command": command, "text": text}
        return dict((await self._call("POST", "/ui/command", json=body))["ack"])

    async def say(self, user: str, *, channel: str, text: str, thread_ts: str | None = None) -> str:
        """Post a message as `user` (mentions of the bot become `app_mention`); returns its ts."""
        body = {"user": user, "channel": channel, "text": text, "thread_ts": thread_ts}
        return str((await self._call("POST", "/ui/message", json=body))["ts"])

    async def open_home(self, user: str) -> JsonObject:
        """Open the app's Home tab (sends `app_home_opened`); returns the app's ack."""
        return dict((await self._call("POST", "/ui/home", json={"user": user}))["ack"])

    # -- admin -------------------------------------------------------------------------

    async def inject(self, fault: Mapping[str, Any]) -> None:
        """Add a fault, e.g. `{"kind": "ratelimit", "method": "chat.update", "count": 2}`."""
        await self._call("POST", "/admin/faults", json=dict(fault))

    async def clear_faults(self) -> None:
        await self._call("DELETE", "/admin/faults")

    async def calls(self, method: str | None = None) -> list[JsonObject]:
        """The Web API call log, oldest first."""
        params = {"method": method} if method else None
        return list((await self._call("GET", "/admin/calls", params=params))["calls"])

    async def set_request_url(self, url: str | None) -> None:
        """Where the sandbox delivers interactions and events over HTTP."""
        await self._call("PUT", "/admin/request-url", json={"url": url})
