"""Catching up a run whose answers an earlier, interrupted attempt already applied.

A worker can die after the agent saved a checkpoint but before the run's next stop was
stored and posted. The retried job then replays answers the run has moved past and the
runtime refuses them; instead of failing forever, the worker looks at where the thread
stands: a run cut off mid-way is continued from its last checkpoint, a run that stopped
again (or ended) has that stop stored and posted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.services import Services
from storage.records import InterruptRecord

from .drive import continue_run, settle, tell_tool_outcome
from .place import place_of

log = logging.getLogger(__name__)


async def catch_up(
    services: Services, records: Sequence[InterruptRecord], *, thread_id: str
) -> bool:
    """Finish the run's bookkeeping from its stored state; False when the answers of
    ``records`` were not applied yet (the refusal had another cause)."""
    first, place = records[0], place_of(records[0])
    agent = services.registry.agent(first.agent)
    status = await agent.thread_status(thread_id)
    if status is None or status.run_id != first.run_id:
        return False
    answered = {record.runtime_interrupt.id for record in records}
    if answered & {interrupt.id for interrupt in status.interrupts}:
        return False
    if status.status != "running" and status.last_result is None:
        return False
    asked: dict[str, str] = {}
    for record in records:  # its worker may have died before telling what the tool did
        call = record.runtime_interrupt.tool_call
        ran = record.decision is not None and record.decision.get("type") in ("approve", "edit")
        if call is None or not ran:
            continue
        asked[call.id] = record.id
        if outcome := status.tool_results.get(call.id):
            await tell_tool_outcome(
                services,
                call,
                outcome,
                thread_id=thread_id,
                run_id=record.run_id,
                record_id=record.id,
                place=place,
                after_crash=True,
            )
    if status.last_result is None or status.status == "running":
        log.warning("run %s was cut off mid-way; continuing it", first.run_id)
        await continue_run(services, first.agent, thread_id=thread_id, place=place, asked=asked)
    else:
        log.warning("run %s: answers were applied by an earlier attempt; catching up", first.run_id)
        await settle(services, first.agent, status.last_result, place=place)
    return True
