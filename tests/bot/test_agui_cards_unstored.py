"""An AG-UI run whose cards cannot be stored does not tell the app it stopped cleanly."""

from __future__ import annotations

from typing import Any

import pytest
from agui_endpoint import Endpoint, ask_one, run_raw

from storage.errors import StorageUnavailableError


async def test_a_run_whose_cards_cannot_be_stored_ends_with_a_run_error(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(*_: Any, **__: Any) -> None:
        raise StorageUnavailableError("redis is down")

    monkeypatch.setattr(endpoint.bot.services.storage.interrupts, "create_interrupts", down)
    body = {
        "threadId": "thread-unstored",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "clean up"}],
    }
    events = await run_raw(endpoint, body)
    assert "RUN_FINISHED" not in [e["type"] for e in events]
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "cards_not_stored"
    assert "storing its approval cards failed" in events[-1]["message"]
    assert endpoint.bot.slack.called("chat.postMessage") == []


async def test_a_run_that_finished_is_told_so_when_its_end_cannot_be_noted_in_slack(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupt, _ = await ask_one(endpoint, "thread-end-unstored")

    async def down(*_: Any, **__: Any) -> bool:
        raise StorageUnavailableError("redis is down")

    monkeypatch.setattr(endpoint.bot.services.storage.resume, "first_end", down)
    resume = [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    ]
    events = await run_raw(
        endpoint, {"threadId": "thread-end-unstored", "runId": "r2", "resume": resume}
    )
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"]["type"] == "success"
