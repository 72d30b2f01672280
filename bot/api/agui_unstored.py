"""A thread whose run stopped for approval while its cards could not be stored: its app
heard ``RUN_ERROR`` ``cards_not_stored``, with no interrupts to answer. The app's next run
request on the thread stores the cards, and is answered with the interrupts the thread
waits on, as the first should have been; the app (or the cards) can then answer them."""

from __future__ import annotations

from typing import Any

from agent_runtime.agui import parse_run_input
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.results import AgentResult
from agent_runtime.runnable import Runnable
from bot.services import Services
from storage.ids import record_id

from .agui_cards import carded


async def unstored_stop(
    services: Services, agent: Runnable, name: str, body: dict[str, Any]
) -> AgentResult | None:
    """The stop ``body``'s thread waits on when ``body`` is a new prompt (no resume) and
    none of that stop's cards was ever stored; None otherwise (the run goes as usual)."""
    try:
        request = parse_run_input(body)
    except AgentRuntimeError:
        return None
    if request.resume:
        return None
    try:
        status = await agent.thread_status(request.thread_id)
    except AgentRuntimeError:  # the run reports it
        return None
    if status is None or status.status != "interrupted" or status.last_result is None:
        return None
    stop = status.last_result
    waiting = {i.id for i in status.interrupts}
    if not waiting or {i.id for i in stop.interrupts} != waiting:
        return None
    if not all(carded(services, name, i) for i in stop.interrupts):
        return None
    ids = [record_id(status.run_id, i) for i in sorted(waiting)]
    return stop if await services.storage.queries.never_stored(status.run_id, ids) else None
