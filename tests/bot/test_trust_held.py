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
from fakes import home_click_payload
from harness import ALICE, BOB, CAROL, CHANNEL, Harness
from test_trust_resume import _resume_queued
from trust_runs import approved_without_a_click, held_cards, start_cleanup, trust_held

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
    await bot.slack.wait_for(lambda: len(held_cards(bot)) == 1, what="Alice's approval, held")
    bot.clock.advance(WINDOW * 2)
    await Scheduler(bot.services, made_final=made_final).tick()

    running = asyncio.create_task(worker.run())  # the first card's job: the second call asks
    try:
        await bot.slack.wait_for(lambda: len(held_cards(bot)) == 2, what="the second card, held")
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
    it. The tool runs once, under one grant, the thread never says it was not kept, and
    /metrics counts the approval once."""
    bot = await trust_held(make_bot, WINDOW)
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
    await approved_without_a_click(bot, 1)
    assert len(await storage.trust.active(bot.clock.now())) == 1
    assert not any(t.startswith(":warning:") for t in bot.thread()), bot.thread()
    bot.clock.advance(GRANT_LEASE * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.clicks_done()
    assert len(bot.tool_log.calls) == 1
    # Handed out again to queue its resume, the decision is counted once, when made final.
    assert bot.services.metrics.decisions == {"approved": 1}


async def test_an_approval_under_a_trust_revoked_in_its_undo_window_asks_a_person(
    make_bot: Any, storage: Storage
) -> None:
    bot = await trust_held(make_bot, WINDOW)
    bot.clock.advance(WINDOW * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await approved_without_a_click(bot, 1)
    later = await start_cleanup(bot)  # approved under Alice's grant, held in its own window
    await bot.slack.wait_for(lambda: len(held_cards(bot)) == 2, what="the later card, held")
    [grant] = await storage.trust.active(bot.clock.now())

    await bot.send(home_click_payload(user=ALICE, action_id=ids.REVOKE_TRUST, value=grant.id))
    await bot.slack.wait_for(
        lambda: any(t.startswith(f":unlock: <@{ALICE}> revoked") for t in bot.thread()),
        what="the revocation told",
    )
    bot.clock.advance(WINDOW * 2)
    await Scheduler(bot.services, made_final=made_final).tick()

    assert len(bot.tool_log.calls) == 1  # the later run's call did not run
    record = await storage.queries.get(bot.record_id(_value(later, ids.APPROVE)))
    assert record is not None and (record.state, record.held, record.trust_grant) == (
        "pending",
        None,
        None,
    )
    assert record.undone is not None and record.undone.lapsed == "revoked"
    said = f":unlock: The approval made under <@{ALICE}>'s trust did not take effect <!date^"
    why = "(that trust was revoked before it was final); it waits for a decision again"
    ts = record.message_ts
    redrawn = [u for u in bot.slack.called("chat.update") if u["ts"] == ts][-1]
    assert said in str(redrawn["blocks"]) and why in str(redrawn["blocks"])
    assert ids.APPROVE in str(redrawn["blocks"]) and ids.UNDO not in str(redrawn["blocks"])
    posts = [p for p in bot.slack.called("chat.postMessage") if p.get("thread_ts") == ts]
    [note] = [str(p["text"]) for p in posts if str(p.get("text", "")).startswith(said)]
    assert note.endswith(why)
    events = [e.event for e in await storage.audit.read(count=100) if e.record_id == record.id]
    assert events[-1] == "trust_lapsed"

    # A person decides it now, as on any card.
    updates = len(bot.slack.called("chat.update"))
    await bot.click(ids.APPROVE, _value(redrawn, ids.APPROVE), user=BOB, message_ts=ts)
    await bot.slack.wait_for(
        lambda: any(
            u["ts"] == ts and f"<@{BOB}>" in str(u["blocks"]) and "not yet final" in str(u)
            for u in bot.slack.called("chat.update")[updates:]
        ),
        what="Bob's approval, held",
    )
