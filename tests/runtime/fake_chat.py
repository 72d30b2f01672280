"""A local fake of an OpenAI-compatible chat-completions server, for OpenAIChatModel's tests."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer


@dataclass
class FakeChatServer:
    """Answers POST /v1/chat/completions with queued replies and records each request."""

    base_url: str = ""
    replies: list[tuple[int, str] | tuple[int, str, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth_headers: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)

    def reply_json(self, body: dict[str, Any], status: int = 200) -> None:
        self.replies.append((status, json.dumps(body)))

    def reply_tool_calls(self, *calls: tuple[str, str, str]) -> None:
        """Queue an assistant turn calling tools; each call is (id, name, arguments string)."""
        tool_calls = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
        self.reply_json(
            completion({"role": "assistant", "content": None, "tool_calls": tool_calls})
        )

    def reply_text(self, text: str) -> None:
        self.reply_json(completion({"role": "assistant", "content": text}))

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        self.auth_headers.append(request.headers.get("Authorization", ""))
        self.queries.append(request.query_string)
        status, body, *headers = self.replies.pop(0)
        return web.Response(
            status=status, text=body, content_type="application/json", headers=(headers or [{}])[0]
        )


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


@asynccontextmanager
async def serving() -> AsyncIterator[FakeChatServer]:
    """A fake server on a free loopback port, its ``base_url`` set, closed afterwards."""
    fake = FakeChatServer()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.handle)
    test_server = TestServer(app, port=0)
    await test_server.start_server()
    fake.base_url = str(test_server.make_url("/v1"))
    try:
        yield fake
    finally:
        await test_server.close()
