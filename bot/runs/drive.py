"""Starting runs, resuming them, and turning how a run stopped into Slack messages.

A run that stops for a human gets one stored record per interrupt (stored before it is
posted), posted to the channel its policy names; later rounds of the same run go in the
first message's thread, with the run's progress and final result.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from agent_runtime.interrupts import InterruptResponse
from agent_runtime.messages import ToolCall
from agent_runtime.results import AgentResult, ToolResult
from agent_runtime.resume import ContinueRun
from agent_runtime.run_events import RunFinished, RunStarted, ToolCallFinished
from bot.agents.policy import is_channel_id
from bot.errors import RunRefusedError, UndecidableError, UnknownAgentError
from bot.services import Services
from bot.ui.notes import post_in_thread
from bot.ui.posting import post_interrupt
from bot.ui.redraws import update_message
from bot.ui.requester import mention_in_thread, tell_finished
from storage.audit import AuditEntry
from storage.errors import DuplicateInterruptError, StorageError
from storage.ids import quoted_id, record_id
from storage.records import InterruptRecord

from .approvers import interrupt_records
from .place import Place, first_posted, place_of
from .trusted import approve_if_trusted

log = logging.getLogger(__name__)


async def start_run(
    services: Services, agent_name: str, prompt: str, *, place: Place
) -> AgentResult:
    """Run ``agent_name`` on ``prompt`` until it finishes or stops for approval;
    UnknownAgentError when there is none so called, RunRefusedError (nothing started) when
    it cannot run at ``place``."""
    spec = services.registry.spec(agent_name)
    if spec is None:
        raise UnknownAgentError(unknown_agent(services, agent_name))
    if place.channel is not None and not is_channel_id(place.channel):
        # Checked before anything is stored: a record under a #name could never be updated.
        raise RunRefusedError(
            f"channel {place.channel!r}: use a channel id such as C0123ABCD (not a #name)"
        )
    if is_direct_message(place.channel) and spec.asks_where_it_runs(services.default_channel):
        raise RunRefusedError(
            f"Run {agent_name} in a channel its approvers are in: it asks for approval where "
            "it runs, and nobody else sees this direct message."
        )
    return await _drive(services, agent_name, prompt, thread_id=None, place=place)  # a new thread


def is_direct_message(channel: str | None) -> bool:
    """A direct message with the app (Slack's ``D...`` ids), seen by one person only."""
    return channel is not None and channel.startswith("D")


def unknown_agent(services: Services, agent_name: str) -> str:
    """Why ``agent_name`` cannot run, naming the agents that can."""
    if not services.registry.names:
        return (
            f"no agent named {quoted_id(agent_name)}: no agents are loaded (set SIGNOFF_AGENTS, or "
            "--agents, to the module that defines them)"
        )
    return f"no agent named {quoted_id(agent_name)} (known: {', '.join(services.registry.names)})"


async def resume_run(
    services: Services,
    records: Sequence[InterruptRecord],
    *,
    thread_id: str,
) -> AgentResult:
    """Continue the run of ``records`` (all decided) with their stored answers; a run one
    of whose requests expired or was withdrawn where a denial is not an answer it takes
    is ended as cancelled (it would refuse the denial, and never go on)."""
    first = first_posted(records)
    place = place_of(first)
    unanswerable = next((rec for rec in records if not rec.takes_its_end()), None)
    if unanswerable is not None:
        ended = await services.registry.agent(first.agent).cancel(
            thread_id, f"not approved: the request was {unanswerable.state}"
        )
        if ended is not None:
            await settle(services, first.agent, ended, place=place)
            return ended
    responses: list[InterruptResponse] = [r for r in (rec.response() for rec in records) if r]
    asked = {
        call.id: rec for rec in records if (call := rec.runtime_interrupt.tool_call) is not None
    }
    return await _drive(
        services, first.agent, responses, thread_id=thread_id, place=place, asked=asked
    )


async def continue_run(
    services: Services,
    agent_name: str,
    *,
    thread_id: str,
    place: Place,
    asked: Mapping[str, InterruptRecord],
) -> AgentResult:
    """Continue a run cut off mid-way (its worker died) from its last checkpoint."""
    return await _drive(
        services, agent_name, ContinueRun(), thread_id=thread_id, place=place, asked=asked
    )


async def _drive(
    services: Services,
    agent_name: str,
    run_input: str | list[InterruptResponse] | ContinueRun,
    *,
    thread_id: str | None,
    place: Place,
    asked: Mapping[str, InterruptRecord] | None = None,
) -> AgentResult:
    """Run the agent (on a new thread when ``thread_id`` is None); post what its tools did
    after a decision; audit every tool's outcome (``asked`` maps a tool call to the record
    of the interrupt that asked about it)."""
    agent = services.registry.agent(agent_name)
    result: AgentResult | None = None
    run_id = ""
    async for event in agent.stream(run_input, thread_id=thread_id):
        if isinstance(event, RunStarted):
            run_id = event.run_id
        elif isinstance(event, ToolCallFinished) and event.ran:
            # A denied or answered call did not run: its card and audit entry say so.
            record = (asked or {}).get(event.tool_call.id)
            await tell_tool_outcome(
                services,
                event.tool_call,
                event.result,
                thread_id=event.thread_id,
                run_id=run_id,
                record_id=record.id if record else "",
                place=told_at(place, record) if not isinstance(run_input, str) else None,
            )
        elif isinstance(event, RunFinished):
            result = event.result
    assert result is not None, "every run ends with RunFinished"
    await settle(services, agent_name, result, place=place)
    return result


async def settle(
    services: Services, agent_name: str, result: AgentResult, *, place: Place
) -> AgentResult | None:
    """Store and post the run's new interrupts, or post how it ended (at most once); the
    run's end instead, when its interrupts could not be asked (``_end_undecidable``).

    Interrupts an earlier attempt already stored are not an error: they are left as stored.
    """
    if result.stop_reason == "interrupt" and result.interrupts:
        try:
            records = await interrupt_records(services, agent_name, result, place=place)
        except UndecidableError as exc:
            return await _end_undecidable(services, agent_name, result, str(exc), place=place)
        try:
            await services.storage.interrupts.create_interrupts(records)
        except DuplicateInterruptError:
            # An earlier attempt stored them; the outbox posts any it did not (once, leased).
            log.info("interrupts of run %s were already stored", result.run_id)
            return None
        services.due_soon.due(*(r.expires_at for r in records))
        for record in records:
            await _supersede(services, record)
            posted = await post_interrupt(services, record)
            # A batch card is decided item by item on the card, never under a trust grant.
            if posted is not None and posted.message_ts is not None and posted.batch is None:
                trusted = await approve_if_trusted(services, posted)
                if trusted is not posted:
                    await update_message(services, trusted)
        return None
    if not await services.storage.resume.first_end(result.run_id):
        log.info("run %s: its end was announced before; not again", result.run_id)
        return None
    outcome = "Finished" if result.stop_reason == "end_turn" else f"Stopped ({result.stop_reason})"
    text = f"{outcome}: {result.message}" if result.message else outcome
    ended = "finished" if result.stop_reason == "end_turn" else f"stopped_{result.stop_reason}"
    await _audit(services, ended, result.run_id, "", text)
    channel, thread_ts, requester = place.channel, place.thread_ts, place.requested_by
    mention = mention_in_thread(requester, place.asked_in, channel)
    await post_in_thread(
        services,
        channel=channel,
        thread_ts=thread_ts,
        text=text,
        mention=mention,
        or_tell=requester if mention else None,
    )
    await tell_finished(
        services,
        requested_by=requester,
        asked_in=place.asked_in,
        channel=channel,
        thread_ts=thread_ts,
        text=text,
    )
    return None


async def _end_undecidable(
    services: Services, agent_name: str, result: AgentResult, why: str, *, place: Place
) -> AgentResult | None:
    """End a run stopped for an approval no card could decide (its policy offers nothing
    the call allows): nothing is posted to decide, the calls it waits on do not run, and
    the requester is told why, as the run's end (returned; None when the run moved on
    meanwhile, told by whoever moved it)."""
    log.error("run %s of %s ended: %s", result.run_id, agent_name, why)
    ended = await services.registry.agent(agent_name).cancel(result.thread_id, why)
    if ended is not None:
        await settle(services, agent_name, ended, place=place)
    return ended


async def _supersede(services: Services, record: InterruptRecord) -> None:
    """When ``record`` asks again because what an approved call acts on changed before it
    ran, the approved card says so (it did not run)."""
    reason = record.runtime_interrupt.reason
    earlier = reason.get("supersedes") if isinstance(reason, dict) else None
    if not isinstance(earlier, str):
        return
    try:
        marked = await services.storage.interrupts.supersede(
            record_id(record.run_id, earlier), by=record.id, now=services.clock.now()
        )
    except StorageError as exc:
        log.error("interrupt %s: the approval it replaces not marked: %s", record.id, exc)
        return
    if marked is not None:
        await update_message(services, marked)


def told_at(place: Place, record: InterruptRecord | None) -> Place:
    """Where a tool's outcome is posted: the thread of the card that let it run (a round's
    cards each have their own), else the run's."""
    if record is None or not (record.thread_ts or record.message_ts):
        return place
    return place_of(record)


AUDIT_DETAIL = 500
"""Characters of a tool's result (or a run's last words) kept in its audit entry."""


def outcome_text(tool: str, outcome: ToolResult) -> str:
    """ "delete_files: deleted 2": what a tool did, named once. A failure whose text names
    the tool already ("delete_files failed: ...", as Signoff's agent loop and a Genkit
    restart say it) is told as it is; others ("Error: ...", as Strands and LangGraph say
    it) after the tool's name; input it refused ("invalid input for delete_files: ...", as
    Signoff's agent loop says it) as "delete_files: invalid input: ..."."""
    said = outcome.as_text()
    if outcome.is_error and said.startswith((f"{tool} ", f"{tool}:")):
        return said
    refused = f"invalid input for {tool}: "
    if outcome.is_error and said.startswith(refused):
        return f"{tool}: invalid input: {said.removeprefix(refused)}"
    return f"{tool}: {said}"


async def tell_tool_outcome(
    services: Services,
    call: ToolCall,
    outcome: ToolResult,
    *,
    thread_id: str,
    run_id: str,
    record_id: str,
    place: Place | None,
    after_crash: bool = False,
) -> None:
    """Post what a tool did in the run's thread at ``place``, then audit it once (the call
    is named by the agent's thread, its id and the record that let it run: a provider
    numbering its calls per turn gives a later approved call an earlier one's id). A
    worker catching up a run whose worker died (``after_crash``) tells it only when it
    was not audited yet: so it is audited once and posted at least once (twice if that
    worker died between the two)."""
    text = outcome_text(call.name, outcome)
    entry = AuditEntry(
        event="tool_failed" if outcome.is_error else "tool_ran",
        record_id=record_id,
        run_id=run_id,
        at=services.clock.now(),
        detail=text[:AUDIT_DETAIL],
    )
    if place is not None and not after_crash:
        await post_in_thread(services, channel=place.channel, thread_ts=place.thread_ts, text=text)
    try:
        once = f"{thread_id} {call.id} {record_id}"
        first = await services.storage.audit.append_once(entry, once=once) is not None
    except StorageError as exc:
        log.error("run %s: %s not audited: %s", run_id, entry.event, exc)
        first = True
    if place is not None and after_crash and first:
        await post_in_thread(services, channel=place.channel, thread_ts=place.thread_ts, text=text)


async def _audit(services: Services, event: str, run_id: str, record_id: str, detail: str) -> None:
    """Keep an outcome in the audit trail; a storage failure is logged, the run goes on."""
    entry = AuditEntry(
        event=event,
        record_id=record_id,
        run_id=run_id,
        at=services.clock.now(),
        detail=detail[:AUDIT_DETAIL],
    )
    try:
        await services.storage.audit.append(entry)
    except StorageError as exc:
        log.error("run %s: %s not audited: %s", run_id, event, exc)
