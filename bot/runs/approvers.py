"""Who may decide an interrupt, in the form storage enforces: the agent's (or tool's)
``Policy`` turned into an ``ApproverPolicy``, with user group members resolved now."""

from __future__ import annotations

from collections.abc import Callable

from agent_runtime.interrupts import DecisionType, Interrupt
from agent_runtime.results import AgentResult
from bot.agents.policy import Policy, Reminders
from bot.errors import UndecidableError
from bot.services import Services
from storage.approvers import ApproverPolicy, Rung
from storage.records import InterruptRecord

from .place import Place
from .stand_ins import with_stand_ins


async def interrupt_records(
    services: Services, agent_name: str, result: AgentResult, *, place: Place
) -> list[InterruptRecord]:
    """One record per interrupt of ``result``, under the policy of its agent and tool;
    UndecidableError when the policy offers one of them no decision its call allows."""
    spec = services.registry.spec(agent_name)
    assert spec is not None
    now = services.clock.now()
    records = []
    for interrupt in result.interrupts:
        policy = spec.policy_for(_tool(interrupt)).with_channel(services.default_channel)
        if not card_decisions(policy, interrupt):
            said = policy.offers_none(
                _tool(interrupt) or interrupt.name, interrupt.allowed_decisions
            )
            raise UndecidableError(agent_name, said)
        channel = policy.channel or (None if policy.dm else place.channel)
        record = InterruptRecord.new(
            interrupt,
            run_id=result.run_id,
            thread_id=result.thread_id,
            agent=agent_name,
            requested_by=place.requested_by,
            policy=await approver_policy(services, policy, interrupt, requester=place.requested_by),
            now=now,
            channel=channel,
        )
        record = record.model_copy(update={"asked_in": place.requester_channel})
        if place.thread_ts and channel == place.channel:
            record = record.model_copy(update={"thread_ts": place.thread_ts})
        records.append(record)
    return batched(records, lambda tool: spec.policy_for(tool).batch)


MAX_BATCH = 100
"""Items on one batch card (ten checkbox groups of ten, well inside Slack's 50 blocks);
more calls of the tool make further cards."""


def batched(
    records: list[InterruptRecord], batch: Callable[[str | None], bool]
) -> list[InterruptRecord]:
    """``records``, the approvals of each tool whose policy says ``batch`` grouped into
    cards (two or more calls): each item names the card's first item, which lists them."""
    groups: dict[tuple[str, str | None], list[int]] = {}
    for index, record in enumerate(records):
        tool = _tool(record.runtime_interrupt)
        if tool is not None and record.runtime_interrupt.is_approval and batch(tool):
            groups.setdefault((tool, record.channel), []).append(index)
    batched = list(records)
    for indexes in groups.values():
        for start in range(0, len(indexes), MAX_BATCH):
            chunk = indexes[start : start + MAX_BATCH]
            if len(chunk) < 2:
                continue
            lead = records[chunk[0]].id
            items = tuple(records[i].id for i in chunk)
            for i in chunk:
                update: dict[str, object] = {"batch": lead}
                if i == chunk[0]:
                    update["batch_items"] = items
                batched[i] = records[i].model_copy(update=update)
    return batched


async def approver_policy(
    services: Services, policy: Policy, interrupt: Interrupt, *, requester: str
) -> ApproverPolicy:
    """Storage's form of ``policy`` for a request of ``requester``, with group members
    resolved now (Slack is asked once)."""
    members = await services.directory.members(policy.groups) if policy.groups else ()
    users, stand_ins = await with_stand_ins(services, policy.users, members, requester=requester)
    rungs = []
    for step in policy.escalations:  # someone away on a step is stood in for there too
        step_members = await services.directory.members(step.groups) if step.groups else ()
        step_users, step_stand_ins = await with_stand_ins(
            services, step.users, step_members, requester=requester
        )
        stand_ins += step_stand_ins
        rungs.append(
            Rung(
                channel=step.channel,
                users=step_users,
                groups=step.groups,
                group_members=step_members,
                open_to_channel=step.anyone_in_channel,
                expires_in=step.expires_after,
            )
        )
    escalate = rungs[0] if rungs else None
    decisions = card_decisions(policy, interrupt)
    reminders = policy.reminders
    return ApproverPolicy(
        allowed_users=users,
        stand_ins=tuple(dict.fromkeys(stand_ins)),
        allowed_groups=policy.groups,
        group_members=members,
        open_to_channel=policy.anyone_in_channel,
        min_approvals=policy.min_approvals,
        allow_self_approval=policy.self_approval,
        expires_in=policy.expires_after,
        on_expiry="escalate" if escalate else "deny",
        escalate_to_channel=escalate.channel if escalate else None,
        escalate_to_users=escalate.users if escalate else (),
        escalate_to_groups=escalate.groups if escalate else (),
        escalate_group_members=escalate.group_members if escalate else (),
        escalate_open_to_channel=escalate.open_to_channel if escalate else False,
        escalate_expires_in=escalate.expires_in if escalate else None,
        ladder=tuple(rungs[1:]),
        reminders=tuple(reminders.every * (i + 1) for i in range(reminders.limit))
        if reminders
        else (),
        work_start_hour=(reminders or Reminders()).start_hour,
        work_end_hour=(reminders or Reminders()).end_hour,
        decisions=decisions,
        free_text_answers="respond" in policy.decisions or not interrupt.options,
        dangerous=policy.dangerous,
        undo_window=policy.undo_window,
        if_nobody_decides=policy.if_nobody_decides,
    )


def card_decisions(policy: Policy, interrupt: Interrupt) -> tuple[DecisionType, ...]:
    """The decisions the card offers: a question is answered (or declined, when the policy
    lets approvers deny); an approval, what ``Policy.offers`` gives for its call (none:
    the policy offers nothing the call allows, and no card can be decided)."""
    if interrupt.question:
        return ("respond", "reject") if "reject" in policy.decisions else ("respond",)
    editable = interrupt.tool_call is not None
    return policy.offers(interrupt.allowed_decisions, editable=editable)


def _tool(interrupt: Interrupt) -> str | None:
    return interrupt.tool_call.name if interrupt.tool_call else None
