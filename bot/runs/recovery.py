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

from agent_runtime import ContinueRun
from bot.services import Services
from storage.records import InterruptRecord

from .drive import settle
from .place import place_of

log = logging.getLogger(__name__)


async def catch_up(
    services: Services, records: Sequence[InterruptRecord], *, thread_id: str
) -> bool:
    """Finish the run's bookkeeping from its stored state; False when the answers of
    ``records`` were not applied yet (the refusal had another cause)."""
    first = records[0]
    agent = services.registry.agent(first.agent)
    status = await agent.thread_status(thread_id)
    if status is None or status.run_id != first.run_id:
        return False
    answered = {record.runtime_interrupt.id for record in records}
    if answered & {interrupt.id for interrupt in status.interrupts}:
        return False
    if status.status == "running":
        log.warning("run %s was cut off mid-way; continuing it", first.run_id)
        result = await agent.invoke(ContinueRun(), thread_id=thread_id)
    elif status.last_result is not None:
        log.warning("run %s: answers were applied by an earlier attempt; catching up", first.run_id)
        result = status.last_result
    else:
        return False
    await settle(services, first.agent, result, place=place_of(first))
    return True
