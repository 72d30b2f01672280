"""Fuzzing ``POST /agui/{agent}``: Hypothesis builds run requests from the shapes an app
sends (a prompt in ``messages``, a ``resume`` of the interrupts it was asked), with fields
replaced or removed, over real HTTP and real Redis. Whatever arrives: a JSON 4xx naming
what is wrong, or an event stream ending in ``RUN_FINISHED`` or ``RUN_ERROR``; no 5xx,
no traceback in the log, and the pending request of another thread is unchanged."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest
from agui_endpoint import TOKEN, Endpoint, ask_one
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz import JSON, _mutated

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _bodies(interrupt_id: str) -> list[dict[str, Any]]:
    """What an app sends: a first run, a resume of its interrupt (on another thread than
    the one that asked it, so nothing here can decide it), and a run with its state."""
    answer = {"interruptId": interrupt_id, "status": "resolved", "payload": {"type": "approve"}}
    message = {"id": "m1", "role": "user", "content": "clean up"}
    return [
        {"threadId": "thread-fuzz", "runId": "r1", "messages": [message]},
        {"threadId": "thread-other", "runId": "r2", "resume": [answer]},
        {
            "threadId": "thread-fuzz",
            "runId": "r3",
            "messages": [message],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        },
    ]


async def _post(endpoint: Endpoint, body: Any) -> tuple[int, str, list[dict[str, Any]]]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(endpoint.url, data=json.dumps(body), headers=AUTH) as response,
    ):
        text = await response.text()
    if response.content_type != "text/event-stream":
        return response.status, response.content_type, []
    events = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    return response.status, response.content_type, events


async def test_no_run_request_gets_a_5xx_or_a_traceback_or_decides_another_thread(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    interrupt, card = await ask_one(endpoint, "thread-mine")
    storage = endpoint.bot.services.storage
    key = storage.keys.record(card)
    before = await storage.client.raw.hgetall(key)
    caplog.set_level(logging.WARNING)
    loop = asyncio.get_running_loop()
    answers: list[int] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=st.sampled_from(_bodies(interrupt["id"])).flatmap(_mutated) | JSON)
    def post(body: Any) -> None:
        sent = asyncio.run_coroutine_threadsafe(_post(endpoint, body), loop)
        status, content_type, events = sent.result(60)
        answers.append(status)
        assert status < 500, body
        if status >= 400:
            assert content_type == "application/json", body
        else:
            assert events and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), (body, events)

    await asyncio.to_thread(post)
    await endpoint.bot.services.background.idle()

    assert len(answers) >= 100 and 400 in answers and 200 in answers
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == []
    assert await storage.client.raw.hgetall(key) == before
