"""The Slack side of an AG-UI run: its interrupts posted as cards when the agent's policy
names a channel, and the app's answers recorded on them first, atomically.

Whichever answer comes first wins. The app's resume decides the cards "in the app" (no
resume job follows: the AG-UI request resumes the run itself); an interrupt already
decided on its card refuses the app's answer, naming who decided it, and the resume
worker runs the rest.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agent_runtime.agui import interrupt_responses, parse_run_input
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.interrupts import Decision, Interrupt, InterruptResponse
from agent_runtime.runnable import Runnable
from bot.runs.drive import settle
from bot.runs.place import Place, place_of
from bot.services import Services
from bot.ui.cards import IN_APP
from bot.ui.posting import update_message
from storage.errors import InvalidIdError
from storage.keys import record_id
from storage.records import InterruptRecord

log = logging.getLogger(__name__)


async def answer_cards(
    services: Services, agent: Runnable, body: dict[str, Any]
) -> tuple[str | None, Place | None]:
    """Record the resume in ``body`` on its interrupts' cards, first checking none was
    decided already; ``(why the resume is refused, or None; where the cards are)``.

    A resume the runtime would refuse anyway (malformed, unknown interrupts) changes no
    card: the run reports it."""
    try:
        request = parse_run_input(body)
        status = await agent.thread_status(request.thread_id) if request.resume else None
        if status is None:
            return None, None
        ids = [record_id(status.run_id, a.interrupt_id) for a in request.resume]
    except (AgentRuntimeError, InvalidIdError):
        return None, None
    cards, _ = await services.storage.queries.many(ids)
    for card in cards:
        if card.state != "pending":  # decided on its card first (or expired)
            return _decided_elsewhere(card), place_of(card)
    try:
        if status.status != "interrupted":
            return None, None
        responses = interrupt_responses(request.resume, list(status.interrupts))
    except AgentRuntimeError:
        return None, None
    now = services.clock.now()
    decided: list[InterruptRecord] = []
    for rid, response in zip(ids, responses, strict=True):
        if not any(c.id == rid for c in cards):
            continue  # this interrupt has no card
        decision = _decision(response)
        outcome, after = await services.storage.interrupts.decide_in_app(
            rid, IN_APP, decision, now=now
        )
        if outcome == "already_decided" and after is not None:  # a click came in between
            return _decided_elsewhere(after), place_of(after)
        if after is not None:
            decided.append(after)
    for card in decided:
        await update_message(services, card)
    return None, place_of(decided[0]) if decided else None


async def post_cards(
    services: Services, name: str, agent: Runnable, thread_id: str, place: Place | None
) -> None:
    """After an AG-UI run: post its new interrupts as cards when the policy names where,
    or, when it ended, say so in its cards' thread."""
    status = await agent.thread_status(thread_id) if thread_id else None
    result = status.last_result if status else None
    if result is None:
        return
    if result.stop_reason != "interrupt":
        if place is not None:
            await settle(services, name, result, place=place)
        return
    if all(_posted_somewhere(services, name, i) for i in result.interrupts):
        where = place or Place(channel=None, thread_ts=None, requested_by=IN_APP)
        await settle(services, name, result, place=where)


def _posted_somewhere(services: Services, name: str, interrupt: Interrupt) -> bool:
    spec = services.registry.spec(name)
    assert spec is not None
    tool = interrupt.tool_call.name if interrupt.tool_call else None
    policy = spec.policy_for(tool).with_channel(services.default_channel)
    return policy.channel is not None or policy.dm


def _decision(response: InterruptResponse) -> Decision:
    """What the card records of the app's answer."""
    if response.decision is not None:
        return response.decision
    answer = response.response
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return Decision.respond(text)


def _decided_elsewhere(card: InterruptRecord) -> str:
    who = ""
    if card.decided_by == IN_APP:
        who = " in the app"
    elif card.decided_by:
        who = f" in Slack by {card.decided_by}"
    return (
        f"interrupt {card.runtime_interrupt.id} was already {card.state}{who}; "
        "this answer changed nothing"
    )
