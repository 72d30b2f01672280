"""Who may decide an interrupt, and what happens if nobody does, in words for its card
and for the refusals of a click."""

from __future__ import annotations

import re
from datetime import timedelta

from storage.approvers import ApproverPolicy
from storage.records import InterruptRecord

from .blocks import date_token, is_user_id, user_mention
from .mrkdwn import code_span
from .slack_failures import NOT_A_MEMBER

_CHANNEL = re.compile(r"^[CGD][A-Z0-9]{2,20}$")


def who_may_decide(record: InterruptRecord) -> str:
    """ "2 of @alice, @oncall, not the requester": who may decide, from the stored policy;
    each person, group and channel once, where first named (a ladder may name an approver)."""
    policy = record.policy
    standing_in = dict(policy.stand_ins)
    named: dict[str, str] = {}
    for u in policy.allowed_users[:10]:
        named.setdefault(
            u,
            f"{user_mention(u)} for {user_mention(standing_in[u])}, who is away"
            if u in standing_in
            else user_mention(u),
        )
    for g in policy.allowed_groups[:10]:
        named.setdefault(f"subteam:{g}", f"<!subteam^{g}>")
    if policy.open_to_channel:
        named.setdefault(f"channel:{record.channel}", "anyone in this channel")
    for rung in record.reached_rungs:
        for u in rung.users[:10]:
            named.setdefault(u, user_mention(u))
        for g in rung.groups[:10]:
            named.setdefault(f"subteam:{g}", f"<!subteam^{g}>")
        if rung.open_to_channel:
            where = rung.channel or record.channel
            named.setdefault(f"channel:{where}", f"anyone in {_channel(where)}")
    if not named:
        return ""
    who = ", ".join(named.values())
    if policy.min_approvals > 1:
        who = f"{policy.min_approvals} of {who}"
    if not policy.allow_self_approval and is_user_id(record.requested_by):
        who += ", not the requester"
    return who


def if_nobody_decides(record: InterruptRecord) -> str | None:
    """ "If nobody decides by 18:00, it goes to @lead; if nobody decides by 22:00, it is
    denied": each step left, in every reader's own time zone; None without an expiry."""
    policy, expires = record.policy, record.expires_at
    if expires is None:
        return None
    end = "approved by default" if record.approved_by_default else "denied"
    steps, when = [], expires
    for rung in policy.rungs[record.escalation_step :]:
        named = [user_mention(u) for u in rung.users[:5]]
        named += [f"<!subteam^{g}>" for g in rung.groups[:5]]
        if rung.open_to_channel:
            named.append(f"anyone in {_channel(rung.channel or record.channel)}")
        steps.append(f"If nobody decides by {date_token(when)}, it goes to {', '.join(named)}")
        when += rung.expires_in or policy.expires_in or timedelta(0)
    steps.append(f"If nobody decides by {date_token(when)}, it is {end}")
    return "; ".join(s if i == 0 else s[0].lower() + s[1:] for i, s in enumerate(steps))


def escalation_channel(record: InterruptRecord) -> str | None:
    """Where the escalation step it reached asks: that step's channel, or its own."""
    reached = record.reached_rungs
    return (reached[-1].channel if reached else None) or record.channel


def escalated_to(record: InterruptRecord) -> str | None:
    """ "Escalated to #leads" while an escalated interrupt waits, or why its card is not
    there when Slack refused it; None otherwise."""
    if not record.escalated:
        return None
    where = escalation_channel(record)
    here = where is None or where == record.channel
    if record.escalation_unposted and record.escalation_error:
        return escalation_refused(record, "in this thread" if here else f"to {_channel(where)}")
    if here:
        return "Escalated in this thread: not decided in time"
    return f"Escalated to {_channel(where)}: not decided in time"


def escalation_refused(record: InterruptRecord, where: str) -> str:
    """Why the escalation card is not posted ``where`` ("to #leads"): what Slack answered,
    and that the outbox posts it once Slack takes it (once the app is invited, most often)."""
    why = record.escalation_error or ""
    if why in NOT_A_MEMBER:
        return (
            f"Escalation {where} could not be posted: the app is not in that channel; "
            "invite it (`/invite @Signoff`) and it is posted then"
        )
    return (
        f"Escalation {where} could not be posted yet: Slack answered {code_span(why, 200)}; "
        "it is posted once Slack takes it"
    )


def _channel(channel_id: str | None) -> str:
    return f"<#{channel_id}>" if channel_id and _CHANNEL.match(channel_id) else "its channel"


def nobody_can_approve(policy: ApproverPolicy, *, escalated: bool = False) -> str | None:
    """Why nobody can approve under ``policy``, or None when someone can.

    Group members are resolved when the interrupt is posted; a group Slack would not list
    (no ``usergroups:read`` scope) or an empty one leaves a policy with only groups with
    nobody, and storage refuses everyone (fail closed): the card and the refusal say so.
    """
    if policy.open_to_channel or policy.allowed_users or policy.group_members:
        return None
    if escalated and any(r.deciders or r.open_to_channel for r in policy.rungs):
        return None
    groups = policy.allowed_groups[:10]
    if not groups:
        return "Nobody can approve this: its policy names no approvers."
    which = f"group {groups[0]} has" if len(groups) == 1 else f"groups {', '.join(groups)} have"
    return (
        f"Nobody can approve this yet: {which} no members Signoff can see; "
        "check the app's usergroups:read scope"
    )


def approvals_out_of_reach(record: InterruptRecord) -> str | None:
    """Why the approvals ``record`` needs cannot add up as it stands, or None when they can:
    the requester may not approve their own request, nor may whoever stands in for them (or
    whom they stand in for), and someone away and their stand-in are one voice."""
    policy, reached = record.policy, record.reached_rungs
    if policy.allow_self_approval or policy.open_to_channel:
        return None
    if any(rung.open_to_channel for rung in reached):
        return None
    voices = set(policy.deciders).union(*(rung.deciders for rung in reached))
    if not voices:
        return None  # nobody_can_approve says why
    requester = record.requested_by
    voices -= {requester}
    voices -= {d for d, for_user in policy.stand_ins if for_user == requester}
    voices -= {for_user for d, for_user in policy.stand_ins if d == requester}
    for delegate, for_user in policy.stand_ins:
        if delegate in voices and for_user in voices:
            voices.discard(delegate)
    if len(voices) >= policy.min_approvals:
        return None
    needed = policy.min_approvals
    return (
        f"This cannot be approved: it needs {needed} approval{'s' if needed > 1 else ''} "
        f"from people other than the requester, and only {len(voices)} may approve"
    )
