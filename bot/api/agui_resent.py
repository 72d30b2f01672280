"""A resume the app sends again after its stream was cut off (its connection dropped, or
the bot's process died, while the round ran): the app never heard how the round ended.

Its answers were recorded on the cards "in the app", so the resume sent again, with the
same answers, is recognised: it runs nothing again, and is answered with the round's
outcome, the thread as it stands (its RUN_FINISHED: success, or the next interrupts),
or, while the round still runs, a RUN_ERROR saying so and to send it again once it ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_runtime.agui import interrupt_responses, parse_run_input
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.results import AgentResult
from agent_runtime.runnable import Runnable
from bot.services import Services
from bot.ui.cards import IN_APP
from storage.errors import InvalidIdError
from storage.keys import record_id

from .agui_cards import Refusal, card_decision

ROUND_RUNNING = "round_running"
"""The RUN_ERROR code of a resume sent again while the round it started still runs."""


@dataclass(frozen=True)
class Resent:
    """What a resume sent again is answered with: the round's end (replayed as its
    RUN_FINISHED), or why it cannot be told yet."""

    ended: AgentResult | None = None
    running: Refusal | None = None


async def resent_round(services: Services, agent: Runnable, body: dict[str, Any]) -> Resent | None:
    """How the round ``body``'s resume started went, when ``body`` sends again the answers
    the app gave its cards (each decided in the app, as the resume says); None otherwise
    (the resume goes as usual)."""
    try:
        request = parse_run_input(body)
        status = await agent.thread_status(request.thread_id) if request.resume else None
        if status is None:
            return None
        ids = [record_id(status.run_id, a.interrupt_id) for a in request.resume]
    except (AgentRuntimeError, InvalidIdError):
        return None
    cards, _ = await services.storage.queries.many(ids)
    if len(cards) != len(ids) or any(card.decided_by != IN_APP for card in cards):
        return None
    try:
        responses = interrupt_responses(request.resume, [c.runtime_interrupt for c in cards])
    except AgentRuntimeError:
        return None
    by_interrupt = {card.runtime_interrupt.id: card for card in cards}
    for response in responses:
        card = by_interrupt[response.interrupt_id]
        if card.decision != card_decision(response, card).to_dict():
            return None  # another answer than the one recorded: refused as usual
    open_ids = {i.id for i in status.interrupts}
    stop = status.last_result
    if status.status == "running" or open_ids & set(by_interrupt) or stop is None:
        answered = ", ".join(sorted(by_interrupt))
        how = "approved" if all(card.state == "approved" for card in cards) else "answered"
        return Resent(
            running=Refusal(
                ROUND_RUNNING,
                f"{answered} already {how} in the app by this same answer, and the round "
                "it started is still running (it goes on without the app); send this "
                "resume again once it ends to hear how it ended",
            )
        )
    if status.status == "interrupted" and {i.id for i in stop.interrupts} != open_ids:
        return None  # the thread waits on interrupts its last stop does not name
    return Resent(ended=stop)
