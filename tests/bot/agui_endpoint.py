"""Driving ``POST /agui/{agent}`` as an app does: the real ``@ag-ui/client`` from npm, or a
run request sent raw; shared by the AG-UI endpoint's test files."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from harness import Harness

TOKEN = "api-token-" + "y" * 24
CLIENT = Path(__file__).resolve().parents[1] / "agui" / "client.mjs"


@dataclass
class Endpoint:
    bot: Harness
    url: str


async def run_client(url: str, thread: str, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the real AG-UI client through ``plan``; what it saw at each step."""
    process = await asyncio.create_subprocess_exec(
        "node",
        str(CLIENT),
        url,
        TOKEN,
        thread,
        json.dumps(plan),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


async def ask_one(endpoint: Endpoint, thread: str) -> tuple[dict[str, Any], str]:
    """Start a run on ``thread``: its one interrupt, and the id of the card asking it."""
    [first] = await run_client(endpoint.url, thread, [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    value = endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    return interrupt, endpoint.bot.record_id(value)


async def answer_one(endpoint: Endpoint, thread: str, iid: str, **answer: Any) -> dict[str, Any]:
    [seen] = await run_client(endpoint.url, thread, [{"resume": [{"interruptId": iid, **answer}]}])
    return seen


async def still_pending(endpoint: Endpoint, rid: str) -> bool:
    record = await endpoint.bot.services.storage.queries.get(rid)
    return record is not None and record.state == "pending" and record.decided_by is None


async def run_raw(endpoint: Endpoint, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one run request as any app could send it, bypassing the client's
    own checks."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(endpoint.url, json=body, headers=headers) as response,
    ):
        text = await response.text()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


async def cut_off(url: str, thread: str, resume: list[dict[str, Any]]) -> None:
    """Send ``resume`` and drop the connection once the round has started."""
    body = {"threadId": thread, "runId": "r-cut", "resume": resume}
    async with aiohttp.ClientSession() as http:
        response = await http.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert b"RUN_STARTED" in await response.content.readline()
        response.close()


def round_ran(bot: Harness) -> asyncio.Event:
    """Set once the app's round has ended and its resume is kept as the thread's last."""
    resumes = bot.services.storage.app_resumes
    remember, ran = resumes.remember, asyncio.Event()

    async def remember_and_tell(thread_id: str, digest: str) -> None:
        await remember(thread_id, digest)
        ran.set()

    resumes.remember = remember_and_tell  # type: ignore[method-assign]
    return ran
