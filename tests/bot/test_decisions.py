"""Decisions over signed HTTP: approve, deny with a reason, edit, reply, quorum (issue tests 1-4, 6)."""

from __future__ import annotations

from typing import Any

from conftest import ALICE, CHANNEL, Harness

from bot import ids


async def _resumed(bot: Harness) -> None:
    """Wait until the run's final result is posted in the thread."""
    await bot.slack.wait_for(
        lambda: any(
            str(p.get("text", "")).startswith("Finished")
            for p in bot.slack.called("chat.postMessage")
        ),
        what="the run's final result in the thread",
    )


def _thread_texts(bot: Harness) -> list[str]:
    root = bot.message_ts()
    return [
        str(p["text"]) for p in bot.slack.called("chat.postMessage") if p.get("thread_ts") == root
    ]


async def test_approve_runs_the_tool_once_updates_the_message_and_posts_the_result(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    posted = bot.posted()
    assert posted["channel"] == CHANNEL and "delete_files" in posted["text"]

    response = await bot.click(ids.APPROVE, value, user=ALICE)
    assert response.status == 200
    await _resumed(bot)

    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    update = bot.slack.called("chat.update")[-1]
    assert update["ts"] == bot.message_ts() and update["channel"] == CHANNEL
    assert "actions" not in [b["type"] for b in update["blocks"]]
    assert any(f"<@{ALICE}>" in str(b) for b in update["blocks"])
    thread = _thread_texts(bot)
    assert any("deleted 2 file(s)" in t for t in thread)
