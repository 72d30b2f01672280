"""Catching up a run whose answers an earlier, interrupted attempt already applied.

A worker can die after the agent saved its new snapshot but before the next round's
interrupts were stored and posted (or the final result was posted). The retried job then
replays answers the run has moved past and the runtime refuses them; instead of failing
forever, the worker reads what the thread waits on now and finishes the bookkeeping.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agent_runtime.results import AgentResult
from agent_runtime.state import RunState
from storage.records import InterruptRecord

from .poster import post_in_thread
from .runs import place_of, settle
from .services import Services

log = logging.getLogger(__name__)

LOST_RESULT = "Finished. (Its final message was not kept: a worker stopped before posting it.)"
CANNOT_CONTINUE = (
    "Stopped: a worker died in the middle of this run, after the decision was applied; "
    "it cannot be continued automatically. Start it again if it is still needed."
)


async def catch_up(
    services: Services, records: Sequence[InterruptRecord], *, thread_id: str
) -> bool:
    """Store and post what the run waits on now, or how it ended; False when the
    answers of ``records`` were not applied yet (the refusal had another cause)."""
    first = records[0]
    agent = services.registry.agent(first.agent)
    waiting = await agent.open_interrupts(thread_id)
    answered = {record.runtime_interrupt.id for record in records}
    if answered & {interrupt.id for interrupt in waiting}:
        return False
    place = place_of(first)
    log.warning("run %s: answers were applied by an earlier attempt; catching up", first.run_id)
    if waiting:
        result = AgentResult(
            stop_reason="interrupt",
            message="waiting for a human decision",
            thread_id=thread_id,
            run_id=first.run_id,
            interrupts=tuple(waiting),
        )
        await settle(services, first.agent, result, place=place)
        return True
    text = LOST_RESULT if await _ended(services, thread_id) else CANNOT_CONTINUE
    await post_in_thread(services, channel=place.channel, thread_ts=place.thread_ts, text=text)
    return True


async def _ended(services: Services, thread_id: str) -> bool:
    """True when the thread's run ended: a run keeps its answers until it ends."""
    stored = await services.storage.sessions.load(thread_id)
    return stored is not None and not RunState.from_snapshot(stored.snapshot).answers
