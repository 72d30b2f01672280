"""A thread whose round was cut off mid-run: the process running the app's round died (in
a tool, say), leaving the thread stored as running with no one to end it. Where no card
resumed that round (no resume worker runs it), the app's next request on the thread
continues it from its last checkpoint, as a resume worker continues a run whose worker
died: a tool whose result was not saved runs again, its context saying an earlier attempt
may have done its work (``attempt`` above 1, the same ``idempotency_key``). The request
is answered with how the round ended; its own input is not run. While the round still
runs in a live process (it holds the thread: ``AppRuns``), the request is told so."""

from __future__ import annotations

from typing import Any

from agent_runtime.agui import parse_run_input
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.runnable import Runnable
from bot.services import Services
from storage.errors import InvalidIdError
from storage.ids import record_id

from .agui_cards import Refusal
from .agui_resent import ROUND_RUNNING


async def mid_round(services: Services, agent: Runnable, body: dict[str, Any]) -> bool:
    """Whether ``body``'s thread is stored mid-round (running) in a round no card resumed,
    which only an AG-UI request ends: continued if no live process holds it."""
    try:
        thread_id = parse_run_input(body).thread_id
        status = await agent.thread_status(thread_id)
        if status is None or status.status != "running":
            return False
        stop = status.last_result
        asked = stop.interrupts if stop is not None else ()
        ids = [record_id(stop.run_id, i.id) for i in asked] if stop is not None else []
    except (AgentRuntimeError, InvalidIdError):
        return False  # the run reports it
    cards, _ = await services.storage.queries.many(ids) if ids else ([], [])
    return not cards


def running_now(body: dict[str, Any]) -> Refusal:
    """Why a request is refused while another request holds its thread (taking its
    answers, or running the round they resume)."""
    return Refusal(
        ROUND_RUNNING,
        f"an earlier request holds thread {body.get('threadId')} now, answering its "
        "interrupts or running its round (in this or another of Signoff's processes); send "
        "this again once it ends to hear how it ended",
    )


def ran_meanwhile_now(body: dict[str, Any]) -> Refusal:
    """Why a request that found its thread mid-round is refused once that round ended
    before the request took the thread: it is not continued, having ended."""
    return Refusal(
        ROUND_RUNNING,
        f"a round ran on thread {body.get('threadId')} as this request came, started by an "
        "earlier request; send this again to hear how it ended",
    )
