"""Trust behind an undo window. An "Approve and trust" made final when its window ends
resumes its run only once its grant is stored (the resumed run's next call meets it),
and Redis failing in between leaves the run to the next sweep, not waiting for good. An
approval a grant made is final only if the grant still stands when its window ends:
revoked meanwhile, the card asks a person again and says why."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, BOB, CAROL, CHANNEL, Harness
from test_trust import _approved_without_a_click, _held, _trust_held
from test_trust_resume import _resume_queued

from agent_runtime.interrupts import Remember
from bot.agents.policy import Policy
from bot.decisions.clicks import made_final
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.runs.workers import ResumeWorker
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import Storage
from storage.errors import StorageTimeoutError
from storage.sweeps import GRANT_LEASE

WINDOW = timedelta(seconds=60)


def _policy() -> Policy:
    return Policy(
        users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60), undo_window=WINDOW
    )


def _value(card: dict[str, Any], action: str) -> str:
    [value] = [e["value"] for e in card["blocks"][-1]["elements"] if e["action_id"] == action]
    return str(value)


async def test_a_held_trusts_resumed_run_meets_the_grant_however_soon_it_resumes(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every resume job queued by the time the grant is stored runs first: the run's
    second call of the tool is still approved under Alice's trust, not asked again."""
    bot: Harness = await make_bot(_policy(), workers=0, then=({"paths": ["/tmp/c"]},))
    worker = ResumeWorker(bot.services, consumer="worker")
    grant = storage.trust.grant

    async def resumed_first(**grant_args: Any) -> Any:
        await _resume_queued(worker, storage)
        return await grant(**grant_args)

    monkeypatch.setattr(storage.trust, "grant", resumed_first)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_calls("chat.postMessage")
    [card] = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    await bot.click(ids.TRUST, _value(card, ids.TRUST), user=ALICE)
    await bot.slack.wait_for(lambda: len(_held(bot)) == 1, what="Alice's approval, held")
    bot.clock.advance(WINDOW * 2)
    await Scheduler(bot.services, made_final=made_final).tick()

    running = asyncio.create_task(worker.run())  # the first card's job: the second call asks
    try:
        await bot.slack.wait_for(lambda: len(_held(bot)) == 2, what="the second card, held")
    finally:
        worker.stop()
        await running
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    [_, again] = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    second = await storage.queries.get(bot.record_id(_value(again, ids.APPROVE)))
    assert second is not None and second.held is not None and second.held.by == ALICE
    assert second.trust_grant is not None  # under the grant: nobody was asked


async def test_redis_failing_as_a_held_trusts_resume_is_queued_leaves_it_to_the_next_sweep(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window ends, the grant is stored, then Redis fails as the run's resume is
    queued: nothing runs yet, and once ``GRANT_LEASE`` has passed a later sweep queues
    it. The tool runs once, under one grant, and the thread never says it was not kept."""
    bot = await _trust_held(make_bot, WINDOW)
    grant_stored = storage.interrupts.grant_stored

    async def fails(*_: Any, **__: Any) -> str | None:
        raise StorageTimeoutError("queue a resume: Redis did not answer in time")

    monkeypatch.setattr(storage.interrupts, "grant_stored", fails)
    bot.clock.advance(WINDOW * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.slack.wait_for(
        lambda: "Trusted until" in str(bot.slack.called("chat.update")[-1]["blocks"]),
        what="the card drawn final",
    )
    monkeypatch.setattr(storage.interrupts, "grant_stored", grant_stored)
    await Scheduler(bot.services, made_final=made_final).tick()  # within the lease: not yet
    assert bot.tool_log.calls == []

    bot.clock.advance(GRANT_LEASE)
    await Scheduler(bot.services, made_final=made_final).tick()
    await _approved_without_a_click(bot, 1)
    assert len(await storage.trust.active(bot.clock.now())) == 1
    assert not any(t.startswith(":warning:") for t in bot.thread()), bot.thread()
    bot.clock.advance(GRANT_LEASE * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.clicks_done()
    assert len(bot.tool_log.calls) == 1
