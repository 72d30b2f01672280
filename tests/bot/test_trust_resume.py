"""An "Approve and trust" click's grant is stored before its run resumes: the resumed
run's next call of the same tool meets the grant, however soon it comes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from agent_runtime.interrupts import Remember
from bot.agents.policy import Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.runs.workers import ResumeWorker
from bot.ui import ids
from storage import Storage


async def _resume_queued(worker: ResumeWorker, storage: Storage) -> None:
    """Run every resume job queued by now, as a worker would."""
    for job in await storage.resume.claim(worker.consumer, count=10):
        await worker.handle_job(job)


async def test_the_resumed_runs_next_call_of_the_tool_meets_the_grant_however_soon_it_comes(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fastest resume there can be: whenever the grant is stored, every resume job
    queued by then has run first. The run's second call of the tool is still approved
    under Alice's trust, on a card of its own, and nobody is asked again."""
    policy = Policy(users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60))
    bot: Harness = await make_bot(policy, workers=0, then=({"paths": ["/tmp/c"]},))
    worker = ResumeWorker(bot.services, consumer="worker")
    grant, granted = storage.trust.grant, asyncio.Event()

    async def resumed_first(**grant_args: Any) -> Any:
        await _resume_queued(worker, storage)
        try:
            return await grant(**grant_args)
        finally:
            granted.set()

    monkeypatch.setattr(storage.trust, "grant", resumed_first)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_calls("chat.postMessage")
    [card] = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    [value] = [e["value"] for e in card["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST]
    await bot.click(ids.TRUST, value, user=ALICE)

    await asyncio.wait_for(granted.wait(), 5)  # the test runs no resume before it either
    running = asyncio.create_task(worker.run())  # the click's job, then the second call's
    try:
        await bot.slack.wait_for(
            lambda: len(bot.tool_log.calls) == 2, what="the second call run under the trust"
        )
    finally:
        worker.stop()
        await running
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]
    [_, again] = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    [asked] = {e["value"] for e in again["blocks"][-1]["elements"] if e.get("value")}
    second = await storage.queries.get(bot.record_id(asked))
    assert second is not None and second.run_id == bot.record_id(value).split("/")[0]
    assert (second.state, second.decided_by, bool(second.trust_grant)) == ("approved", ALICE, True)
