"""Starting runs, resuming them, and turning how a run stopped into Slack messages.

A run that stops for a human gets one stored record per interrupt (stored before it is
posted), posted to the channel its policy names; later rounds of the same run go in the
first message's thread, with the run's progress and final result.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agent_runtime.interrupts import Interrupt, InterruptResponse
from agent_runtime.messages import new_id
from agent_runtime.results import AgentResult
from agent_runtime.run_events import RunFinished, ToolCallFinished
from storage.errors import DuplicateInterruptError
from storage.records import ApproverPolicy, InterruptRecord

from .errors import BotError
from .policy import Escalate, Policy, Reminders
from .poster import post_in_thread, post_interrupt
from .services import Services

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Place:
    """Where a run talks: the channel and thread of its messages, and who asked for it."""

    channel: str | None
    thread_ts: str | None
    requested_by: str


async def start_run(
    services: Services, agent_name: str, prompt: str, *, place: Place
) -> AgentResult:
    """Run ``agent_name`` on ``prompt`` until it finishes or stops for approval."""
    if services.registry.spec(agent_name) is None:
        raise BotError(unknown_agent(services, agent_name))
    return await _drive(services, agent_name, prompt, thread_id=new_id("thread"), place=place)


def unknown_agent(services: Services, agent_name: str) -> str:
    """Why ``agent_name`` cannot run, naming the agents that can."""
    known = ", ".join(services.registry.names) or "none"
    return f"no agent named {agent_name!r} (known: {known})"


async def resume_run(
    services: Services,
    records: Sequence[InterruptRecord],
    *,
    thread_id: str,
) -> AgentResult:
    """Continue the run of ``records`` (all decided) with their stored answers."""
    first = records[0]
    responses: list[InterruptResponse] = [r for r in (rec.response() for rec in records) if r]
    place = place_of(first)
    return await _drive(services, first.agent, responses, thread_id=thread_id, place=place)


def place_of(record: InterruptRecord) -> Place:
    """Where the run of ``record`` talks: the thread of its first message."""
    return Place(
        channel=record.channel,
        thread_ts=record.thread_ts or record.message_ts,
        requested_by=record.requested_by,
    )


async def _drive(
    services: Services,
    agent_name: str,
    run_input: str | list[InterruptResponse],
    *,
    thread_id: str,
    place: Place,
) -> AgentResult:
    agent = services.registry.agent(agent_name)
    result: AgentResult | None = None
    async for event in agent.stream(run_input, thread_id=thread_id):
        if isinstance(event, ToolCallFinished) and not isinstance(run_input, str):
            text = f"{event.tool_call.name}: {event.result.as_text()}"
            await post_in_thread(
                services, channel=place.channel, thread_ts=place.thread_ts, text=text
            )
        elif isinstance(event, RunFinished):
            result = event.result
    assert result is not None, "every run ends with RunFinished"
    await settle(services, agent_name, result, place=place)
    return result


async def settle(services: Services, agent_name: str, result: AgentResult, *, place: Place) -> None:
    """Store and post the run's new interrupts, or post how it ended.

    Interrupts an earlier attempt already stored are not an error: they are left as stored.
    """
    if result.stop_reason == "interrupt" and result.interrupts:
        records = await _records(services, agent_name, result, place)
        try:
            await services.storage.interrupts.create_interrupts(records)
        except DuplicateInterruptError:
            # An earlier attempt stored them; the outbox posts any it did not (once, leased).
            log.info("interrupts of run %s were already stored", result.run_id)
            return
        for record in records:
            await post_interrupt(services, record)
        return
    outcome = "Finished" if result.stop_reason == "end_turn" else f"Stopped ({result.stop_reason})"
    await post_in_thread(
        services,
        channel=place.channel,
        thread_ts=place.thread_ts,
        text=f"{outcome}: {result.message}" if result.message else outcome,
    )


async def _records(
    services: Services, agent_name: str, result: AgentResult, place: Place
) -> list[InterruptRecord]:
    spec = services.registry.spec(agent_name)
    assert spec is not None
    now = services.clock.now()
    records = []
    for interrupt in result.interrupts:
        policy = spec.policy_for(_tool(interrupt)).with_channel(services.default_channel)
        channel = policy.channel or (None if policy.dm else place.channel)
        record = InterruptRecord.new(
            interrupt,
            run_id=result.run_id,
            thread_id=result.thread_id,
            agent=agent_name,
            requested_by=place.requested_by,
            policy=await approver_policy(services, policy, interrupt),
            now=now,
            channel=channel,
        )
        if place.thread_ts and channel == place.channel:
            record = record.model_copy(update={"thread_ts": place.thread_ts})
        records.append(record)
    return records


async def approver_policy(
    services: Services, policy: Policy, interrupt: Interrupt
) -> ApproverPolicy:
    """Storage's form of ``policy``, with group members resolved now (Slack is asked once)."""
    members = await services.directory.members(policy.groups) if policy.groups else ()
    escalate = policy.on_expiry if isinstance(policy.on_expiry, Escalate) else None
    escalate_users: tuple[str, ...] = ()
    if escalate is not None:
        escalate_users = escalate.users + await services.directory.members(escalate.groups)
    offered = interrupt.allowed_decisions or policy.decisions
    decisions = tuple(d for d in policy.decisions if d in offered) or ("approve", "reject")
    reminders = policy.reminders
    return ApproverPolicy(
        allowed_users=policy.users,
        allowed_groups=policy.groups,
        group_members=members,
        open_to_channel=policy.anyone_in_channel,
        min_approvals=policy.min_approvals,
        allow_self_approval=policy.self_approval,
        expires_in=policy.expires_after,
        on_expiry="escalate" if escalate else "deny",
        escalate_to_channel=escalate.channel if escalate else None,
        escalate_to_users=escalate_users,
        reminders=tuple(reminders.every * (i + 1) for i in range(reminders.limit))
        if reminders
        else (),
        work_start_hour=(reminders or Reminders()).start_hour,
        work_end_hour=(reminders or Reminders()).end_hour,
        decisions=decisions,
        dangerous=policy.dangerous,
    )


def _tool(interrupt: Interrupt) -> str | None:
    return interrupt.tool_call.name if interrupt.tool_call else None
