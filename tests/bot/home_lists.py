"""App Home as Alice sees it, in tests: requests posted through the requests API to many
team channels, Home opened and paged with signed requests, and what it shows read from the
fake Slack's ``views.publish`` calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from fakes import home_click_payload
from harness import ALICE, Harness
from pydantic import SecretStr

from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app

TEAMS = [f"C0TEAM{n:02d}" for n in range(40)]
QUIET = [f"C0QUIET{n:03d}" for n in range(200)]  # no request waits in these
ROTA = "S0ROTA"


async def ask(bot: Harness, requests: list[dict[str, Any]], *, job: str = "demo-job") -> None:
    """Post ``requests`` through the requests API as ``job`` (each names its channel), a
    second apart; their cards posted."""
    _, token = await bot.services.storage.api_clients.create(
        job, channels=tuple(TEAMS), now=datetime.now(UTC)
    )
    app = operator_app(bot.services, api_token=SecretStr("admin-token-" + "x" * 24))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            for body in requests:
                bot.clock.advance(timedelta(seconds=1))
                async with http.post(
                    f"http://127.0.0.1:{server.port}{REQUESTS_PATH}",
                    json=body,
                    headers={"Authorization": f"Bearer {token}"},
                ) as response:
                    assert response.status == 201, await response.text()
    finally:
        await server.close()


def named_requests(first: int, count: int) -> list[dict[str, Any]]:
    """Requests naming Alice, or a rota she is on, one per team channel from ``first``."""
    return [
        {"channel": TEAMS[n], "title": f"named {n:02d}", "approvers": [ALICE if n else ROTA]}
        for n in range(first, first + count)
    ]


def open_requests(first: int, count: int) -> list[dict[str, Any]]:
    """Requests anyone in their channel may decide, one per team channel from ``first``."""
    return [
        {"channel": TEAMS[n], "title": f"open {n:02d}", "anyone_in_channel": True}
        for n in range(first, first + count)
    ]


def last_home(bot: Harness, user: str = ALICE) -> list[dict[str, Any]]:
    views = [c for c in bot.slack.called("views.publish") if c["user_id"] == user]
    blocks: list[dict[str, Any]] = views[-1]["view"]["blocks"]
    return blocks


def button(blocks: list[dict[str, Any]], action_id: str) -> dict[str, Any] | None:
    for block in blocks:
        for element in block.get("elements") or []:
            if element.get("action_id") == action_id:
                found: dict[str, Any] = element
                return found
    return None


def titles(blocks: list[dict[str, Any]], kind: str) -> list[str]:
    texts = [b["text"]["text"] for b in blocks if b.get("type") == "section" and "text" in b]
    return [t.split("asks: ")[1] for t in texts if f"asks: {kind} " in t]


async def redrawn(bot: Harness, send: Any, user: str = ALICE) -> list[dict[str, Any]]:
    """What ``user``'s Home shows once ``send`` (a signed request) has it redrawn."""

    def published() -> int:
        return len([c for c in bot.slack.called("views.publish") if c["user_id"] == user])

    before = published()
    await send
    await bot.slack.wait_for(lambda: published() > before, what=f"{user}'s Home")
    return last_home(bot, user)


async def open_home(bot: Harness, user: str = ALICE) -> list[dict[str, Any]]:
    return await redrawn(bot, bot.event({"type": "app_home_opened", "user": user}), user)


async def turn_page(
    bot: Harness, action_id: str, value: str, user: str = ALICE
) -> list[dict[str, Any]]:
    click = home_click_payload(user=user, action_id=action_id, value=value)
    return await redrawn(bot, bot.send(click), user)
