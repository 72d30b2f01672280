"""AG-UI over HTTP: ``POST /agui/{agent}`` runs a registered agent for one AG-UI
``RunAgentInput`` and streams the run's events as Server-Sent Events, encoded with
ag-ui-protocol's own encoder (each event is first validated by its models).

A run ends with ``RUN_FINISHED`` (``outcome`` success, or interrupt with the open
interrupts, each with ``expiresAt`` from the agent's policy) or ``RUN_ERROR``; the client
resumes on the same ``threadId`` with ``resume: [{interruptId, status, payload}]``.
``GET /agui/{agent}`` answers the agent's AG-UI capabilities. Both take the runs API's
bearer token (``SIGNOFF_API_TOKEN``). At most ``SIGNOFF_API_OPEN_CALLS`` runs stream at
once in a process (with the admin client's long-polls and runs API starts): one more is
answered 429 before anything starts.

One approval surface: when the agent's policy names a channel (or direct messages), the
run's interrupts are also posted there as cards, before the app hears the run stopped
(when storing them fails, the app hears a ``RUN_ERROR``, not interrupts no card checks,
and its next run request on the thread stores them and hears the interrupts).
The first answer wins, atomically: a resume from the app decides the cards ("decided in
the app") and this request runs the round, holding it (``AppRound``); if the run fails,
or the process dies, the round goes to the resume worker. A resume for an interrupt
already decided on its card gets a ``RUN_ERROR`` naming who decided it; the app's own
resume sent again (its stream cut off) hears how the round it started went
(``agui_resent``). This request holds the thread while its round runs (``AppRuns``), from
before its answers are recorded: the app's other requests meanwhile are told the round
runs, their answers recorded on no card, and, once this process has died mid-round, the
next continues that round (``agui_cut_off``).
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime
from typing import Any

from ag_ui.core import Event
from ag_ui.encoder import EventEncoder
from aiohttp import web
from pydantic import SecretStr, TypeAdapter

from agent_runtime.agui import run_agui
from agent_runtime.agui.events import (
    Expiry,
    Offered,
    Remembers,
    RunErrorEvent,
    run_error,
    run_finished,
    run_started,
)
from agent_runtime.errors import UsageError
from agent_runtime.interrupts import DecisionType, Interrupt
from agent_runtime.results import AgentResult
from agent_runtime.runnable import Runnable
from bot.agents.policy import AgentSpec
from bot.errors import AgentBuildError
from bot.runs.approvers import card_decisions
from bot.runs.drive import unknown_agent
from bot.services import Services
from bot.ui.arg_form import loads_finite
from storage.api_clients import ADMIN
from storage.errors import CorruptRecordError, InvalidIdError, StorageError
from storage.ids import check_id

from .agui_cards import CardAnswers, answer_cards, carded, post_cards
from .agui_cut_off import mid_round, ran_meanwhile_now, running_now
from .agui_resent import remember_resume, resent_round
from .agui_unstored import unstored_stop
from .app_rounds import HANDED_OVER, AppRound
from .auth import NOT_OPERATOR, bearer_check
from .bodies import read
from .open_calls import OpenCalls

log = logging.getLogger(__name__)

AGUI_PATH = "/agui"
_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def add_agui_routes(
    app: web.Application, services: Services, *, token: SecretStr, open_calls: OpenCalls
) -> None:
    """Add the AG-UI endpoint to ``app``, guarded by ``token``; each run's stream holds one
    of the admin client's ``open_calls`` until the run ends (its app gone or not)."""
    authorized = bearer_check(token)

    async def run(request: web.Request) -> web.StreamResponse:
        if not authorized(request):
            return _error(401, NOT_OPERATOR)
        slot = open_calls.take(ADMIN)
        if slot is None:  # before any work: the streams already open go on
            return open_calls.refusal(ADMIN)
        with slot:
            return await stream(request)

    async def stream(request: web.Request) -> web.StreamResponse:
        name = request.match_info["agent"]
        if services.registry.spec(name) is None:
            return _error(404, unknown_agent(services, name))
        raw = await read(request)
        if isinstance(raw, web.Response):
            return raw
        try:  # NaN or Infinity in an answer would be recorded, and no run state can keep it
            body = loads_finite(raw.decode())
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return _error(400, f"the body must be a RunAgentInput as JSON: {exc}")
        if not isinstance(body, dict):
            return _error(400, "the body must be a RunAgentInput object")
        try:  # the thread's session is kept under its id: refused before anything starts
            check_id("thread", body.get("threadId"))
        except InvalidIdError as exc:
            return _error(400, f"threadId: {exc}")
        encoder = EventEncoder(accept=request.headers.get("Accept") or "text/event-stream")
        response = web.StreamResponse(
            headers={"Content-Type": encoder.get_content_type(), "Cache-Control": "no-cache"}
        )
        try:
            agent = services.registry.agent(name)
        except (UsageError, AgentBuildError) as exc:  # its build failed: JSON, not a text page
            log.exception("AG-UI run of %s not started", name)
            return _error(500, f"{exc}; see the bot's log")
        async with contextlib.AsyncExitStack() as holding:
            try:
                # A round left mid-run that no card resumed: continued, or told it runs.
                cut_off = await mid_round(services, agent, body)
                # A resume sent again after its stream was cut off hears how its round went.
                resent = None if cut_off else await resent_round(services, agent, body)
                async with contextlib.AsyncExitStack() as taking:
                    # Held before any card takes the app's answers, so a request refused
                    # as another round runs records none; let go at once if none runs here.
                    alone = bool(resent) or await taking.enter_async_context(
                        services.storage.app_runs.running(str(body["threadId"]))
                    )
                    # Not alone: a card decided first is still told as such, nothing recorded.
                    answers = (
                        CardAnswers()
                        if resent or cut_off
                        else await answer_cards(services, agent, body, record=alone)
                    )
                    # A stop whose cards were never stored is answered now, its cards stored
                    # (by the request that holds the thread: another's round may change it).
                    stop = (
                        None
                        if answers.refusal or resent or cut_off or not alone
                        else await unstored_stop(services, agent, name, body)
                    )
                    runs = not (answers.refusal or resent or stop)
                    if runs:  # held while the round runs here: if this process dies, it lapses
                        await holding.enter_async_context(taking.pop_all())
                # The round seen mid-run may have ended before the hold: not continued.
                ran_meanwhile = cut_off and alone and not await mid_round(services, agent, body)
            except CorruptRecordError as exc:  # damaged for good: asking again will not help
                log.error("AG-UI resume of %s not taken: %s", name, exc)
                return _error(500, "the run's stored state is damaged; see the bot's log")
            except StorageError as exc:  # its cards cannot be read (or decided): no run starts
                log.error("AG-UI resume of %s not taken: %s", name, exc)
                return _error(503, "storage is unavailable; try again")
            refusal = (
                answers.refusal
                or (resent.running if resent else None)
                or (running_now(body) if runs and not alone else None)
                or (ran_meanwhile_now(body) if ran_meanwhile else None)
            )
            ended = stop or (resent.ended if resent else None)
            await response.prepare(request)

            gone = False

            async def send(event: Any) -> None:
                """Stream ``event``; once the app has gone, the run goes on unwatched."""
                nonlocal gone
                if gone:
                    return
                try:
                    await response.write(encoder.encode(_EVENT.validate_python(event)).encode())
                except ConnectionResetError:
                    log.info("AG-UI client of %s went away; the run goes on", name)
                    gone = True

            results: list[AgentResult] = []
            ids = (str(body.get("threadId") or ""), str(body.get("runId") or ""))
            if refusal is not None:
                await send(run_started(thread_id=ids[0], run_id=ids[1]))
                await send(run_error(refusal.message, code=refusal.code))
            elif ended is not None:
                await send(run_started(thread_id=ids[0], run_id=ids[1]))
                expiry = _expiry(services, name, taken=frozenset())
                asked = run_finished(
                    ended,
                    thread_id=ids[0],
                    run_id=ids[1],
                    expiry=expiry,
                    offered=_offered(services, name),
                    remembers=_remembers(services, name, agent),
                    args_schema=agent.tool_schema,
                )
                # A round's end told again: its cards were posted when it ended.
                told = await _post_cards(services, name, stop, answers) if stop else None
                await send(told or asked)
            else:
                # A card that took the app's answer checked it (its own expiry, its offer).
                expiry = _expiry(services, name, taken=answers.taken)
                async with AppRound(services, answers.app_round) as held:
                    async for event in run_agui(
                        agent,
                        body,
                        expiry=expiry,
                        offered=_offered(services, name),
                        remembers=_remembers(services, name, agent),
                        decided_elsewhere=answers.decided_on_cards,
                        finished=results.append,
                        cut_off=cut_off,
                    ):
                        if event["type"] == "RUN_FINISHED":
                            await remember_resume(services, body)  # its round ran: sent again, told
                            await held.done()  # before the next round's cards can be decided
                            # The cards exist before the app hears: it may answer at once.
                            unstored = await _post_cards(services, name, results[-1], answers)
                            event = unstored or event
                        elif event["type"] == "RUN_ERROR" and await held.hand_over():
                            event = run_error(
                                f"{event['message']}; {HANDED_OVER}", code=event["code"]
                            )
                        await send(event)
            if not gone:
                with contextlib.suppress(ConnectionResetError):
                    await response.write_eof()
            return response

    async def capabilities(request: web.Request) -> web.Response:
        if not authorized(request):
            return _error(401, NOT_OPERATOR)
        name = request.match_info["agent"]
        spec = services.registry.spec(name)
        if spec is None:
            return _error(404, unknown_agent(services, name))
        try:
            decisions = _decisions(spec, services.registry.agent(name))
        except (UsageError, AgentBuildError) as exc:  # its build failed: JSON, not a text page
            log.exception("AG-UI capabilities of %s not told", name)
            return _error(500, f"{exc}; see the bot's log")
        return web.json_response(
            {
                "identity": {"name": spec.name, "description": spec.description},
                "transport": {"streaming": True},
                "humanInTheLoop": {
                    "supported": True,
                    "interrupts": True,
                    "approvals": "approve" in decisions,
                    "approveWithEdits": "edit" in decisions,
                    "feedback": "respond" in decisions,
                },
            }
        )

    app.router.add_post(AGUI_PATH + "/{agent}", run)
    app.router.add_get(AGUI_PATH + "/{agent}", capabilities)


async def _post_cards(
    services: Services, name: str, result: AgentResult | None, answers: CardAnswers
) -> RunErrorEvent | None:
    """Post the run's cards; when its interrupts' cards cannot be stored, or the run was
    ended instead as no card could decide them, the RUN_ERROR the app gets instead of a
    RUN_FINISHED that would offer answers no card checks."""
    try:
        ended = await post_cards(services, name, result, answers.place)
    except StorageError as exc:
        log.error("cards of AG-UI run of %s not stored: %s", name, exc)
        if result is None or result.stop_reason != "interrupt":
            return None  # it did finish: only its end was not told in Slack
        return run_error(
            "the run stopped for approval, but storing its approval cards failed; "
            "see the bot's log",
            code="cards_not_stored",
        )
    return run_error(ended.message, code=ended.stop_reason) if ended else None


def _decisions(spec: AgentSpec, agent: Runnable) -> frozenset[DecisionType]:
    """The decisions the agent's cards can offer: for each tool (or node) it asks about,
    those it allows and its policy lets approvers give; its policy's when only its runs
    tell (an adapted framework's)."""
    declared = agent.declared_decisions()
    if declared is None:
        return frozenset(spec.policy.decisions)
    return frozenset(
        d for tool, allowed in declared.items() for d in spec.policy_for(tool).offers(allowed)
    )


def _expiry(services: Services, agent: str, *, taken: frozenset[str]) -> Expiry:
    """When an interrupt of ``agent`` expires under its policy (per tool), if ever; never
    for one whose card ``taken`` the app's answer (the card's own expiry was checked)."""
    spec = services.registry.spec(agent)
    assert spec is not None

    def expires(interrupt: Interrupt) -> datetime | None:
        if interrupt.id in taken:
            return None
        tool = interrupt.tool_call.name if interrupt.tool_call else None
        return interrupt.created_at + spec.policy_for(tool).expires_after

    return expires


def _offered(services: Services, agent: str) -> Offered:
    """The decisions an interrupt of ``agent`` takes: those its card offers (its policy,
    per tool, narrows what the interrupt allows)."""
    spec = services.registry.spec(agent)
    assert spec is not None

    def offered(interrupt: Interrupt) -> tuple[DecisionType, ...]:
        tool = interrupt.tool_call.name if interrupt.tool_call else None
        return card_decisions(spec.policy_for(tool), interrupt)

    return offered


def _remembers(services: Services, name: str, agent: Runnable) -> Remembers:
    """Whether the app's answer to an interrupt of agent ``name`` may trust later calls:
    only where no card asks it, as a card gives trust by its own "Approve and trust", and
    the agent keeps what a decision remembers (an adapted framework asks at each call)."""
    keeps = agent.keeps_run_trust()
    return lambda interrupt: keeps and not carded(services, name, interrupt)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
