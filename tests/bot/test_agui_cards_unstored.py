"""An AG-UI run whose cards cannot be stored does not tell the app it stopped cleanly, and
the app's next message on the thread stores them and hears what the thread waits on."""

from __future__ import annotations

from typing import Any

import pytest
from agui_endpoint import Endpoint, ask_one, run_client, run_raw
from harness import CHANNEL

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


async def test_the_next_run_on_a_thread_whose_cards_were_not_stored_stores_them_and_asks(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app heard ``cards_not_stored`` and has nothing to answer; Redis is back. Its
    next message on the thread (the real AG-UI client's) stores and posts the cards, and
    is answered with the interrupt the thread waits on: the app answers it, the card says
    so, and the tool runs once."""
    bot, thread = endpoint.bot, "thread-cards-again"
    create = bot.services.storage.interrupts.create_interrupts

    async def down(*_: Any, **__: Any) -> None:
        raise StorageUnavailableError("redis is down")

    monkeypatch.setattr(bot.services.storage.interrupts, "create_interrupts", down)
    [failed] = await run_client(endpoint.url, thread, [{"prompt": "clean up"}])
    assert failed["error"]["code"] == "cards_not_stored" and failed["pending"] == []
    monkeypatch.setattr(bot.services.storage.interrupts, "create_interrupts", create)

    asked, answered = await run_client(
        endpoint.url,
        thread,
        [
            {"prompt": "clean up, please"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert asked["error"] is None, asked["error"]
    [interrupt] = asked["finished"]["outcome"]["interrupts"]
    assert asked["pending"] == [interrupt["id"]]
    assert interrupt["toolCallId"] and interrupt["expiresAt"]
    card = bot.posted(0)
    assert card["channel"] == CHANNEL and "delete_files" in card["text"]
    assert answered["error"] is None and answered["finished"]["outcome"] == {"type": "success"}
    await bot.slack.wait_for(
        lambda: any(
            "decided in the app" in str(u["blocks"]) for u in bot.slack.called("chat.update")
        ),
        what="the card decided in the app",
    )
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_cards_never_stored_are_not_stored_while_another_request_holds_the_thread(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message on a thread whose cards were never stored, sent while another request
    holds the thread, is told to send it again and posts nothing; sent again once the
    thread is let go, it stores the cards."""
    bot, thread = endpoint.bot, "thread-cards-held"
    create = bot.services.storage.interrupts.create_interrupts

    async def down(*_: Any, **__: Any) -> None:
        raise StorageUnavailableError("redis is down")

    monkeypatch.setattr(bot.services.storage.interrupts, "create_interrupts", down)
    [failed] = await run_client(endpoint.url, thread, [{"prompt": "clean up"}])
    assert failed["error"]["code"] == "cards_not_stored"
    monkeypatch.setattr(bot.services.storage.interrupts, "create_interrupts", create)

    async with bot.services.storage.app_runs.running(thread) as alone:
        assert alone  # held here, as a request running a round would
        [meanwhile] = await run_client(endpoint.url, thread, [{"prompt": "clean up, please"}])
    assert meanwhile["error"]["code"] == "round_running", meanwhile
    assert bot.slack.called("chat.postMessage") == []

    [asked] = await run_client(endpoint.url, thread, [{"prompt": "clean up, please"}])
    assert asked["error"] is None, asked["error"]
    [interrupt] = asked["finished"]["outcome"]["interrupts"]
    assert asked["pending"] == [interrupt["id"]]
    assert "delete_files" in bot.posted(0)["text"]
