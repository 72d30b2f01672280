"""A batch card's approved items that never ran say why: the run was withdrawn, or a
request of the run (an item, or another card) was lost from Redis while they waited."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime import Agent, ModelRequest, ModelResponse, SessionStore, ToolCall, tool
from bot.agents.policy import AgentSpec, Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

FILES = ["/tmp/a", "/tmp/b"]


class DeleteThenWipe:
    """Asks, in one turn, to delete two files (a batch card) and to wipe a disk (a card
    of its own), then reports what it was told."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        if not any(m.role == "tool" for m in request.messages):
            calls = [
                ToolCall(id=f"call_{n}", name="delete_file", args={"path": path})
                for n, path in enumerate(FILES)
            ]
            calls.append(ToolCall(id="call_wipe", name="wipe_disk", args={"disk": "sdb"}))
            return ModelResponse(tool_calls=tuple(calls))
        return ModelResponse(text="done")


def _spec(ran: list[str]) -> AgentSpec:
    @tool
    def delete_file(path: str) -> str:
        """Delete one file."""
        ran.append(path)
        return "deleted"

    @tool
    def wipe_disk(disk: str) -> str:
        """Wipe a disk."""
        ran.append(disk)
        return "wiped"

    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=DeleteThenWipe(),
            tools=[delete_file, wipe_disk],
            interrupt_on={"delete_file": True, "wipe_disk": True},
            session_store=sessions,
            name="cleanup",
        )

    policy = Policy(channel=CHANNEL, users=(ALICE,), batch=True, expires_after=timedelta(hours=1))
    return AgentSpec(name="cleanup", build=build, policy=policy)


async def _batch_approved(make_bot: Any) -> tuple[Harness, list[str], str, str]:
    """The run's two cards, its batch card's items approved by Alice: the bot, what ran,
    the batch card's ts and the wipe card's record id."""
    ran: list[str] = []
    bot: Harness = await make_bot(spec=_spec(ran))
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_calls("chat.postMessage", 2)
    posts = bot.slack.called("chat.postMessage")
    assert "2 calls" in posts[0]["text"] and "wipe_disk" in posts[1]["text"]
    batch_ts = bot.message_ts(0)
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == batch_ts for u in bot.slack.called("chat.update")),
        what="the batch approved",
    )
    wipe = bot.record_id(posts[1]["blocks"][-1]["elements"][0]["value"])
    return bot, ran, batch_ts, wipe


def _batch_card(bot: Harness, ts: str) -> str:
    return str([u for u in bot.slack.called("chat.update") if u["ts"] == ts][-1]["blocks"])


async def test_batch_items_approved_before_the_run_was_withdrawn_say_they_never_ran(
    make_bot: Any,
) -> None:
    bot, ran, batch_ts, wipe = await _batch_approved(make_bot)
    updates = len(bot.slack.called("chat.update"))
    await bot.click(
        ids.MORE, "", user=CAROL, selected=f"{ids.WITHDRAW} {wipe}", message_ts=bot.message_ts(1)
    )
    await bot.slack.wait_for(
        lambda: any(u["ts"] == batch_ts for u in bot.slack.called("chat.update")[updates:]),
        what="the batch card redrawn",
    )
    said = _batch_card(bot, batch_ts)
    for n, path in enumerate(FILES, start=1):
        line = f"{n}. {path}: Approved by <@{ALICE}>, but not run: <@{CAROL}> withdrew the run"
        assert line in said, said
    assert ran == []


async def test_batch_items_approved_when_another_card_was_lost_do_not_call_it_an_item(
    make_bot: Any,
) -> None:
    bot, ran, batch_ts, wipe = await _batch_approved(make_bot)
    storage = bot.services.storage
    assert await storage.client.raw.delete(storage.keys.record(wipe)) == 1
    bot.clock.advance(timedelta(hours=2))
    await Scheduler(bot.services).tick()

    said = _batch_card(bot, batch_ts)
    for n, path in enumerate(FILES, start=1):
        line = (
            f"{n}. {path}: Approved by <@{ALICE}>, but not run: another request of the run "
            "was lost, so the run was cancelled"
        )
        assert line in said, said
    assert "an item was lost" not in said
    assert ran == []
