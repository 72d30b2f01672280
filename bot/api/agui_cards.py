"""The Slack side of an AG-UI run: its interrupts posted as cards when the agent's policy
names a channel, and the app's answers recorded on them first, atomically.

Whichever answer comes first wins. The app's resume decides the cards "in the app" (no
resume job follows while the AG-UI request runs the round itself); an interrupt already
decided on its card refuses the app's answer, naming who decided it, and the resume
worker runs the rest. A click that lands between the app's answers refuses its resume
too, and the answers it recorded reach the run with the click's, through that worker.
Interrupts of the turn decided on their cards before the app's resume need no answer
from it: the run takes their cards' answers with the app's. An answer the card would not
take (expired, not offered, a ``remember``, as a card gives trust by its own "Approve and
trust" alone, edited arguments that do not fit, or an approval its policy wants from
people: a quorum or an undo window), or a resume the runtime would refuse (an interrupt
answered twice, or not open), is refused before any card changes.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent_runtime.agui import interrupt_responses, parse_run_input
from agent_runtime.errors import AgentRuntimeError
from agent_runtime.interrupts import Decision, Interrupt, InterruptResponse
from agent_runtime.results import AgentResult
from agent_runtime.runnable import Runnable
from bot.runs.drive import settle
from bot.runs.place import Place, first_posted, place_of
from bot.services import Services
from bot.ui.cards import IN_APP
from bot.ui.home import refresh_homes
from bot.ui.redraws import update_message
from storage.errors import InvalidIdError
from storage.ids import record_id
from storage.records import FINAL_STATE_OF, InterruptRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refusal:
    """Why the app's resume is refused (its RUN_ERROR): nothing changed, no card either."""

    code: str
    message: str


@dataclass(frozen=True)
class CardAnswers:
    """What the cards made of the app's resume: why it is refused (or None), where the
    cards are, the answers given on cards the app left out (the run takes them with the
    app's), the interrupts whose cards took the app's answers, and the record whose
    decision closed the round when the app now holds it (``AppRound``)."""

    refusal: Refusal | None = None
    place: Place | None = None
    decided_on_cards: tuple[InterruptResponse, ...] = ()
    taken: frozenset[str] = frozenset()
    app_round: str | None = None


async def answer_cards(
    services: Services, agent: Runnable, body: dict[str, Any], *, record: bool = True
) -> CardAnswers:
    """Record the resume in ``body`` on its interrupts' cards, first checking each card
    takes its answer; with ``record=False`` (another round holds the thread) only check
    whether a card was decided first, and record nothing.

    A resume the runtime would refuse anyway (malformed, unknown interrupts) changes no
    card: the run reports it. Interrupts of the round already decided on their cards
    need no answer from the app: the run goes on with their cards' answers."""
    try:
        request = parse_run_input(body)
        status = await agent.thread_status(request.thread_id) if request.resume else None
        if status is None:
            return CardAnswers()
        answered = {a.interrupt_id for a in request.resume}
        open_ids = {i.id for i in status.interrupts}
        ids = {i: record_id(status.run_id, i) for i in answered | open_ids}
    except (AgentRuntimeError, InvalidIdError):
        return CardAnswers()
    cards, _ = await services.storage.queries.many(list(ids.values()))
    asked = [card for card in cards if card.runtime_interrupt.id in answered]
    final = {card.runtime_interrupt.id: card for card in cards if card.state != "pending"}
    for card in asked:
        if card.state != "pending":  # decided on its card first (or expired)
            rest_open = bool(open_ids - set(final))
            return CardAnswers(_decided_elsewhere(card, rest_open=rest_open), place_of(card))
    if not record:
        return CardAnswers()
    elsewhere = list(final.values())  # open interrupts the app left to their cards
    decided_on_cards = tuple(r for r in (card.response() for card in elsewhere) if r)
    try:
        waiting = [i for i in status.interrupts if i.id not in final]
        if status.status != "interrupted" or not _each_open_once(request.resume, waiting):
            return CardAnswers()
        responses = interrupt_responses(request.resume, waiting)
    except AgentRuntimeError:
        return CardAnswers()
    now = services.clock.now()
    by_id = {card.id: card for card in asked}
    answered_cards = [
        (by_id[ids[r.interrupt_id]], card_decision(r, by_id[ids[r.interrupt_id]]))
        for r in responses
        if ids[r.interrupt_id] in by_id
    ]  # an interrupt may have no card
    for card, decision in answered_cards:
        refusal = _not_taken(agent, card, decision, now)
        if refusal is not None:
            return CardAnswers(refusal, place_of(card))
    decided: list[InterruptRecord] = []
    refused: tuple[Refusal, InterruptRecord] | None = None
    app_round: str | None = None
    for card, decision in answered_cards:
        outcome, after = await services.storage.interrupts.decide_in_app(
            card.id, IN_APP, decision, now=now
        )
        if outcome == "recorded_last":
            app_round = card.id
        if outcome == "already_decided" and after is not None:  # a click came in between
            refused = _decided_elsewhere(after, recorded=decided), after
            break
        if outcome == "expired":
            refused = _expired(card, recorded=decided), card
            break
        if after is not None:
            decided.append(after)
            services.metrics.decisions[after.state] += 1  # once: sent again, already decided
    for card in decided:
        await update_message(services, card)
        # The approvers' Homes drop it, in the background: one views.publish each.
        services.background.spawn(refresh_homes(services, card), name=f"decided {card.id}")
    if refused is not None:
        return CardAnswers(refused[0], place_of(refused[1]))
    round_cards = decided or elsewhere
    place = place_of(first_posted(round_cards)) if round_cards else None
    taken = frozenset(card.runtime_interrupt.id for card in decided)
    return CardAnswers(
        place=place, decided_on_cards=decided_on_cards, taken=taken, app_round=app_round
    )


def _each_open_once(resume: Sequence[Any], waiting: Sequence[Interrupt]) -> bool:
    """Whether the resume answers each interrupt once, and only the ones waiting for it:
    one the runtime would refuse for this must change no card first."""
    answered = [a.interrupt_id for a in resume]
    return len(set(answered)) == len(answered) and set(answered) <= {i.id for i in waiting}


def _not_taken(
    agent: Runnable, card: InterruptRecord, decision: Decision, now: datetime
) -> Refusal | None:
    """Why ``card`` does not take the app's ``decision``, or None when it does."""
    interrupt = card.runtime_interrupt
    if card.expires_at is not None and now >= card.expires_at and decision.type != "reject":
        return _expired(card)
    if interrupt.question:
        return None  # a question's answer is the app's words
    if decision.remember is not None:
        return Refusal(
            "not_offered",
            f"interrupt {interrupt.id} does not offer remember: the app decides this call "
            'alone, and trust is given on its Slack card, by "Approve and trust" where '
            "its policy offers it; answer without remember",
        )
    # A tool's own interrupt (no decisions of its own) offers what its card offers.
    allowed = interrupt.allowed_decisions or card.policy.decisions
    offered = [d for d in allowed if d in card.policy.decisions]
    if decision.type not in offered:
        return Refusal(
            "not_offered", f"interrupt {interrupt.id} offers {offered}, not {decision.type!r}"
        )
    call = interrupt.tool_call
    if decision.type == "edit" and call is not None:
        try:
            agent.check_edit(call, dict(decision.args or {}))
        except AgentRuntimeError as exc:
            return Refusal("invalid_edit", f"these arguments do not fit {call.name}: {exc}")
    if decision.type == "reject":
        return None  # one denial ends any card
    if card.policy.min_approvals > 1:
        return Refusal(
            "approve_in_slack",
            f"interrupt {interrupt.id} needs {card.policy.min_approvals} approvals from "
            "people on its Slack card; the app may only deny it",
        )
    if card.policy.undo_window is not None:
        return Refusal(
            "approve_in_slack",
            f"interrupt {interrupt.id} is approved on its Slack card, where the approval "
            "can be undone for a while; the app may only deny it",
        )
    return None


def _expired(card: InterruptRecord, *, recorded: Sequence[InterruptRecord] = ()) -> Refusal:
    assert card.expires_at is not None
    return Refusal(
        "expired",
        f"interrupt {card.runtime_interrupt.id} expired at {card.expires_at.isoformat()}; "
        + (_kept(recorded) if recorded else "cancel it to continue the thread"),
    )


def _kept(recorded: Sequence[InterruptRecord]) -> str:
    """What became of the app's answers recorded before its resume was refused."""
    answered = ", ".join(card.runtime_interrupt.id for card in recorded)
    return (
        f"your answers to {answered} were recorded on their cards, and Signoff resumes the "
        "run with them once every card is decided"
    )


async def post_cards(
    services: Services, name: str, result: AgentResult | None, place: Place | None
) -> AgentResult | None:
    """After an AG-UI run: post its new interrupts as cards when the policy names where,
    or, when it ended, say so in its cards' thread. Nothing after a failed run (None).
    The run's end instead, when its interrupts could not be asked (``settle``)."""
    if result is None:
        return None
    if result.stop_reason != "interrupt":
        if place is not None:
            await settle(services, name, result, place=place)
        return None
    if all(carded(services, name, i) for i in result.interrupts):
        where = place or Place(channel=None, thread_ts=None, requested_by=IN_APP)
        return await settle(services, name, result, place=where)
    return None


def carded(services: Services, name: str, interrupt: Interrupt) -> bool:
    """Whether ``interrupt`` of agent ``name`` is a card too: its policy names where."""
    spec = services.registry.spec(name)
    assert spec is not None
    tool = interrupt.tool_call.name if interrupt.tool_call else None
    policy = spec.policy_for(tool).with_channel(services.default_channel)
    return policy.channel is not None or policy.dm


def card_decision(response: InterruptResponse, card: InterruptRecord) -> Decision:
    """What the card records of the app's answer: a decision as the card's buttons make
    one, except for a question, whose answer is the app's words."""
    if response.decision is not None:
        return response.decision
    answer = response.response
    if isinstance(answer, dict) and not card.runtime_interrupt.question:
        with contextlib.suppress(AgentRuntimeError):
            return Decision.from_dict(answer)
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return Decision.respond(text)


def _decided_elsewhere(
    card: InterruptRecord, *, recorded: Sequence[InterruptRecord] = (), rest_open: bool = False
) -> Refusal:
    who, state = "", card.state
    if card.held is not None:  # decided in Slack, in its undo window
        state = FINAL_STATE_OF[Decision.from_dict(card.held.decision).type]
        until = card.held.until.strftime("%H:%M:%S UTC")
        who = f" in Slack by {card.held.by} (final at {until} unless undone)"
    elif card.decided_by == IN_APP:
        who = " in the app"
    elif len(card.approvals) > 1:  # a quorum: everyone who approved, as the card names them
        who = f" in Slack by {', '.join(card.approvals)}"
    elif card.decided_by:
        who = f" in Slack by {card.decided_by}"
    return Refusal(
        "decided_elsewhere",
        f"interrupt {card.runtime_interrupt.id} was already {state}{who}; "
        + (_kept(recorded) if recorded else "this answer changed nothing")
        + (
            "; answer the thread's other interrupts without it, and the run goes on with "
            "its card's answer and yours"
            if rest_open
            else ""
        ),
    )
