"""An external request as storage keeps it (a one-interrupt run) and as the API shows it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from agent_runtime.interrupts import Decision, DecisionType, Interrupt
from agent_runtime.messages import JSONValue, ToolCall
from bot.runs.approvers import batched
from bot.runs.stand_ins import with_stand_ins
from bot.services import Services
from bot.ui.blocks import is_user_id
from bot.ui.deciders import escalation_channel
from storage.approvers import ApproverPolicy, Rung
from storage.epoch import from_ms
from storage.records import InterruptRecord
from storage.requests import REQUEST_INTERRUPT, ParamValue, RequestMeta

from .schemas import APPROVED_STATUSES, ItemView, NewRequest, RequestStatusName, RequestView

REQUESTS_PATH = "/api/requests"


def decisions_offered(meta: RequestMeta) -> tuple[DecisionType, ...]:
    """Approve and Deny; Edit when a param is editable; Reply when replies are allowed."""
    offered: list[DecisionType] = ["approve"]
    if any(p.editable for p in meta.params):
        offered.append("edit")
    if meta.allow_reply:
        offered.append("respond")
    return (*offered, "reject")


def item_interrupts(meta: RequestMeta, *, at_ms: int) -> list[Interrupt]:
    """A request with items: an interrupt per item (the first one is the request's own
    ``ask``), each with the item as its one argument, for one batch card."""
    return [
        Interrupt(
            id=REQUEST_INTERRUPT if index == 0 else f"{REQUEST_INTERRUPT}.{index}",
            name=meta.title,
            reason=meta.details or None,
            tool_call=ToolCall(id=f"item_{index}", name=meta.title, args={"item": item}),
            allowed_decisions=decisions_offered(meta),
            created_at=from_ms(at_ms),
        )
        for index, item in enumerate(meta.items)
    ]


def request_interrupt(
    meta: RequestMeta, *, at_ms: int, changed: dict[str, JSONValue] | None = None
) -> Interrupt:
    """The interrupt the card shows: the title, the details and the params as arguments;
    with ``acts_on``, the reason also holds it (``snapshot``) and what ``changed``."""
    values: dict[str, JSONValue] = dict(meta.values)
    call = ToolCall(id=REQUEST_INTERRUPT, name=meta.title, args=values) if meta.params else None
    reason: JSONValue = meta.details or None
    if meta.acts_on is not None:
        reason = {"details": meta.details, "snapshot": meta.acts_on, "changed": changed}
    return Interrupt(
        id=REQUEST_INTERRUPT,
        name=meta.title,
        reason=reason,
        tool_call=call,
        allowed_decisions=decisions_offered(meta),
        created_at=from_ms(at_ms),
    )


async def request_records(
    services: Services,
    body: NewRequest,
    meta: RequestMeta,
    *,
    run_id: str,
    asks_again: InterruptRecord | None = None,
    changed: dict[str, JSONValue] | None = None,
) -> list[InterruptRecord]:
    """The pending record of a new request (one per item, on one card, for a request
    with items), its user groups' members resolved now; one that ``asks_again`` goes in
    that request's thread."""
    users, groups = _users_and_groups(body.approvers)
    members = await services.directory.members(groups) if groups else ()
    users, stand_ins = await with_stand_ins(services, users, members, requester=meta.client)
    steps = [
        (body.escalate_channel, body.escalate_to, body.escalate_anyone_in_channel),
        *((s.channel, s.approvers, s.anyone_in_channel) for s in body.ladder),
    ]
    expiries = [body.escalate_expires_in, *(s.expires_in for s in body.ladder)]
    rungs: list[Rung] = []
    for (channel, approvers, anyone), expires_in in zip(steps, expiries, strict=True):
        rung, step_stand_ins = await _rung(
            services, channel, approvers, anyone, expires_in, requester=meta.client
        )
        rungs.append(rung)
        stand_ins += step_stand_ins
    first, ladder = rungs[0], rungs[1:]
    reminders = body.reminders
    policy = ApproverPolicy(
        allowed_users=users,
        stand_ins=tuple(dict.fromkeys(stand_ins)),
        allowed_groups=groups,
        group_members=members,
        open_to_channel=body.anyone_in_channel,
        min_approvals=body.min_approvals,
        allow_self_approval=body.allow_self_approval,
        expires_in=timedelta(seconds=body.expires_in),
        on_expiry=body.on_expiry,
        escalate_to_channel=first.channel,
        escalate_to_users=first.users,
        escalate_to_groups=first.groups,
        escalate_group_members=first.group_members,
        escalate_open_to_channel=first.open_to_channel,
        escalate_expires_in=first.expires_in,
        ladder=tuple(ladder),
        reminders=tuple(
            timedelta(seconds=reminders.every * (i + 1)) for i in range(reminders.limit)
        )
        if reminders
        else (),
        work_start_hour=reminders.start_hour if reminders else 9,
        work_end_hour=reminders.end_hour if reminders else 18,
        decisions=decisions_offered(meta),
        dangerous=body.dangerous,
        undo_window=timedelta(seconds=body.undo_window) if body.undo_window else None,
        if_nobody_decides=body.if_nobody_decides,
    )
    now = services.clock.now()
    at_ms = int(now.timestamp() * 1000)
    interrupts = (
        item_interrupts(meta, at_ms=at_ms)
        if meta.items
        else [request_interrupt(meta, at_ms=at_ms, changed=changed)]
    )
    records = []
    for interrupt in interrupts:
        record = InterruptRecord.new(
            interrupt,
            run_id=run_id,
            thread_id=run_id,
            agent=meta.client,
            requested_by=meta.client,
            policy=policy,
            now=now,
            channel=body.channel,
        )
        if asks_again is not None and asks_again.channel == body.channel:
            thread = asks_again.thread_ts or asks_again.message_ts
            record = record.model_copy(update={"thread_ts": thread})
        records.append(record)
    return batched(records, lambda tool: True) if len(records) > 1 else records


async def _rung(
    services: Services,
    channel: str | None,
    approvers: list[str],
    anyone_in_channel: bool,
    expires_in: int | None,
    *,
    requester: str,
) -> tuple[Rung, tuple[tuple[str, str], ...]]:
    """An escalation step, its user groups' members resolved now and the delegates of
    its users away added; with its ``(delegate, for_user)`` pairs."""
    users, groups = _users_and_groups(approvers)
    members = await services.directory.members(groups) if groups else ()
    users, stand_ins = await with_stand_ins(services, users, members, requester=requester)
    rung = Rung(
        channel=channel,
        users=users,
        groups=groups,
        group_members=members,
        open_to_channel=anyone_in_channel,
        expires_in=timedelta(seconds=expires_in) if expires_in else None,
    )
    return rung, stand_ins


def _users_and_groups(ids: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """User ids and user group ids (``S…``), apart."""
    return tuple(i for i in ids if i[0] != "S"), tuple(i for i in ids if i[0] == "S")


def request_view(
    record: InterruptRecord, meta: RequestMeta, items: Sequence[InterruptRecord] = ()
) -> RequestView:
    """What the API answers about a request: where it stands, who decided, the params.

    A request with items (``items``, its records in order) is pending while any item is;
    then approved when any item was (by whoever approved the first of them), else as its
    first item ended; each item says how it ended."""
    status: RequestStatusName | None = None
    if len(items) > 1:
        if any(i.state == "pending" for i in items):
            status = "pending"
        else:
            approved = [i for i in items if i.state in APPROVED_STATUSES]
            record = approved[0] if approved else items[0]
            status = "approved" if approved else None
    decision = Decision.from_dict(record.decision) if record.decision else None
    params: dict[str, ParamValue] = dict(meta.values)
    if decision is not None and decision.type == "edit" and decision.args is not None:
        params.update(meta.check_edit(dict(decision.args)))
    status = status or _status(record)
    message = decision.message if decision is not None else None
    policy = record.policy
    return RequestView(
        id=record.run_id,
        status=status,
        title=meta.title,
        channel=record.channel,
        permalink=record.permalink,
        not_posted=record.post_error if record.message_ts is None else None,
        requested_by=record.requested_by,
        approvers=[*policy.allowed_users, *policy.allowed_groups],
        anyone_in_channel=policy.open_to_channel,
        min_approvals=policy.min_approvals,
        approvals=list(record.approvals),
        created_at=record.created_at,
        expires_at=record.expires_at,
        escalated=record.escalated,
        escalation_channel=escalation_channel(record) if record.escalated else None,
        escalation_not_posted=record.escalation_error if record.escalation_unposted else None,
        reminders_sent=record.reminders_sent,
        held_by=record.held.by if record.held else None,
        held_until=record.held.until if record.held else None,
        decided_by=record.decided_by,
        decided_at=record.decided_at,
        reason=message if status in ("denied", "withdrawn") and message else None,
        reply=message if status == "responded" else None,
        params=params,
        items=[item_view(i) for i in items] if len(items) > 1 else [],
        acts_on=meta.acts_on,
        replaces_lost=meta.replaces_lost,
        status_url=f"{REQUESTS_PATH}/{record.run_id}",
    )


async def with_names(services: Services, view: RequestView) -> RequestView:
    """``view`` with the Slack names of the users it names (approvers, who decided) and
    its user groups' handles, so a job's log can say "approved by alice" rather than a
    user id, and "@oncall" rather than a group id."""
    named = [*view.approvers, *view.approvals, view.decided_by, view.held_by]
    named += [item.decided_by for item in view.items]
    users = [who for who in named if who and is_user_id(who)]
    groups = [who for who in view.approvers if who.startswith("S")]  # as the API took them
    return view.model_copy(update={"names": await services.directory.names(users + groups)})


def _status(record: InterruptRecord) -> RequestStatusName:
    return "withdrawn" if record.state == "cancelled" else record.state


def item_view(record: InterruptRecord) -> ItemView:
    """One item of a request with items, as it stands."""
    call = record.runtime_interrupt.tool_call
    message = record.decision.get("message") if record.decision else None
    status = _status(record)
    return ItemView(
        item=str(call.args.get("item", "")) if call else "",
        status=status,
        decided_by=record.decided_by,
        reason=str(message) if message and status in ("denied", "withdrawn") else None,
    )
