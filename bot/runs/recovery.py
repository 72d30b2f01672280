"""Catching up a run whose answers an earlier, interrupted attempt already applied.

A worker can die after the agent saved a checkpoint but before the run's next stop was
stored and posted. The retried job then replays answers the run has moved past and the
runtime refuses them; instead of failing forever, the worker looks at where the thread
stands: a run cut off mid-way is continued from its last checkpoint, a run that stopped
again (or ended) has that stop stored and posted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence, Set

from agent_runtime.results import AgentResult
from agent_runtime.runnable import ThreadStatus
from bot.services import Services
from storage.records import InterruptRecord

from .drive import continue_run, settle, tell_tool_outcome, told_at
from .place import Place, first_posted, place_of

log = logging.getLogger(__name__)


async def _tell_what_ran(
    services: Services,
    status: ThreadStatus,
    asked: Mapping[str, InterruptRecord],
    held: Set[str],
    *,
    place: Place,
) -> None:
    """Tell what each tool did from the records' calls on: the worker that ran them may
    have died before telling (what it told is not told again)."""
    made = [call.id for call, _ in status.tool_results]
    since = min((made.index(c) for c in asked.keys() | held if c in made), default=None)
    if since is None:
        return
    for call, result in status.tool_results[since:]:
        if call.id not in held:
            record = asked.get(call.id)
            await tell_tool_outcome(
                services,
                call,
                result,
                thread_id=status.tools_thread_id or status.thread_id,
                run_id=status.run_id,
                record_id=record.id if record else "",
                place=told_at(place, record),
                after_crash=True,
            )


async def catch_up(
    services: Services, records: Sequence[InterruptRecord], *, thread_id: str
) -> bool:
    """Finish the run's bookkeeping from its stored state; False when the answers of
    ``records`` were not applied yet (the refusal had another cause)."""
    first = first_posted(records)
    place = place_of(first)
    agent = services.registry.agent(first.agent)
    status = await agent.thread_status(thread_id)
    if status is None or status.run_id != first.run_id:
        return False
    answered = {record.runtime_interrupt.id for record in records}
    if answered & {interrupt.id for interrupt in status.interrupts}:
        return False
    asked: dict[str, InterruptRecord] = {}  # each call a record let run, to that record
    held: set[str] = set()  # the calls the records denied or answered
    for record in records:
        call = record.runtime_interrupt.tool_call
        if call is not None and record.decision is not None:
            if record.decision.get("type") in ("approve", "edit"):
                asked[call.id] = record
            else:
                held.add(call.id)
    await _tell_what_ran(services, status, asked, held, place=place)
    if status.status != "running" and status.last_result is None:
        # An adapted framework's thread keeps no result but an end: what its tools did and
        # its new interrupts are all there is left to tell (a withdrawn run was told by
        # whoever withdrew it).
        log.warning("run %s: answers were applied by an earlier attempt", first.run_id)
        if status.interrupts:
            waiting = AgentResult(
                stop_reason="interrupt",
                message="waiting for a human decision",
                thread_id=thread_id,
                run_id=status.run_id,
                interrupts=status.interrupts,
            )
            await settle(services, first.agent, waiting, place=place)
        return True
    if status.last_result is None or status.status == "running":
        log.warning("run %s was cut off mid-way; continuing it", first.run_id)
        await continue_run(services, first.agent, thread_id=thread_id, place=place, asked=asked)
    else:
        log.warning("run %s: answers were applied by an earlier attempt; catching up", first.run_id)
        await settle(services, first.agent, status.last_result, place=place)
    return True
