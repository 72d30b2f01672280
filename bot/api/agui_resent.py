"""A resume the app sends again after its stream was cut off (its connection dropped, or
the bot's process died, while the round ran): the app never heard how the round ended.

Its answers were recorded on the cards "in the app" (with no card, the thread keeps a
digest of the app's last resume), so the resume sent again, with the same answers, is
recognised: it runs nothing again, and is answered with the round's
outcome, the thread as it stands (its RUN_FINISHED: success, or the next interrupts),
or, while the round still runs, a RUN_ERROR saying so and to send it again once it ends.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_runtime.agui import ResumeAnswer, interrupt_responses, parse_run_input
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.results import AgentResult
from agent_runtime.runnable import Runnable
from bot.services import Services
from bot.ui.cards import IN_APP
from storage.errors import InvalidIdError, StorageError
from storage.ids import record_id
from storage.records import InterruptRecord

from .agui_cards import Refusal, card_decision

log = logging.getLogger(__name__)

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
    the app gave (on its cards, each decided in the app, or, with no card, its last resume
    on the thread); None otherwise (the resume goes as usual)."""
    try:
        request = parse_run_input(body)
        status = await agent.thread_status(request.thread_id) if request.resume else None
        if status is None:
            return None
        ids = [record_id(status.run_id, a.interrupt_id) for a in request.resume]
    except (AgentRuntimeError, InvalidIdError):
        return None
    cards, _ = await services.storage.queries.many(ids)
    if cards and not _same_on_cards(request.resume, cards):
        return None
    last = None if cards else await services.storage.app_resumes.last(request.thread_id)
    if not cards and last != resume_digest(request.resume):
        return None
    answered = {a.interrupt_id for a in request.resume}
    still_open = bool(answered & {i.id for i in status.interrupts})
    if still_open and not cards:
        return None  # that resume was refused: it is refused again as usual
    stop = status.last_result
    if status.status == "running" or still_open or stop is None:
        approved = cards and all(card.state == "approved" for card in cards)
        return Resent(
            running=Refusal(
                ROUND_RUNNING,
                f"{', '.join(sorted(answered))} already {'approved' if approved else 'answered'} "
                "in the app by this same answer, and the round it started is still running "
                "(it goes on without the app); send this resume again once it ends to hear "
                "how it ended",
            )
        )
    if status.status == "interrupted" and {i.id for i in stop.interrupts} != {
        i.id for i in status.interrupts
    }:
        return None  # the thread waits on interrupts its last stop does not name
    return Resent(ended=stop)


async def remember_resume(services: Services, body: dict[str, Any]) -> None:
    """Keep the resume in ``body`` as the thread's last, once the round it started ran, so
    the same resume sent again is known (its cards record it too, where it has any)."""
    try:
        request = parse_run_input(body)
        if request.resume:
            digest = resume_digest(request.resume)
            await services.storage.app_resumes.remember(request.thread_id, digest)
    except AgentRuntimeError:
        return  # the run reports it
    except StorageError as exc:  # sent again, it is refused: nothing runs twice
        log.warning("the app's resume on %s not kept: %s", body.get("threadId"), exc)


def resume_digest(resume: Sequence[ResumeAnswer]) -> str:
    """One digest of a resume's answers, whatever their order."""
    entries = sorted([a.interrupt_id, a.status, a.payload] for a in resume)
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _same_on_cards(resume: Sequence[ResumeAnswer], cards: Sequence[InterruptRecord]) -> bool:
    """Whether each card was decided in the app with the answer ``resume`` gives it."""
    if len(cards) != len(resume) or any(card.decided_by != IN_APP for card in cards):
        return False
    try:
        responses = interrupt_responses(resume, [c.runtime_interrupt for c in cards])
    except AgentRuntimeError:
        return False
    by_interrupt = {card.runtime_interrupt.id: card for card in cards}
    return all(
        by_interrupt[r.interrupt_id].decision
        == card_decision(r, by_interrupt[r.interrupt_id]).to_dict()
        for r in responses
    )
