"""Approvers who joined a user group since its members were last stored.

An interrupt stores its groups' members as Slack listed them (when posted, then at each
of the scheduler's checks), so a newcomer to a rotation (a new on-call engineer) could
be refused for minutes. When someone who is not listed acts on an interrupt with groups
(the policy's, or those of an escalation step it reached), Slack is asked again (at most
once a minute per group) and, if they are a member now, the stored members are replaced.
"""

from __future__ import annotations

from datetime import timedelta

from bot.services import Services
from storage.records import InterruptRecord

GROUPS_FRESH_FOR = timedelta(minutes=1)
"""How old a group's member list may be when it settles whether someone may decide."""


async def refresh_groups(services: Services, record: InterruptRecord | None, user: str) -> bool:
    """Whether ``user`` is among the stored members of ``record``'s groups (the policy's,
    and those of the escalation steps it reached) after this call: when they were not but
    Slack now lists them, the stored members are replaced."""
    if record is None or record.state != "pending":
        return False
    policy, reached = record.policy, len(record.reached_rungs)
    groups = [policy.allowed_groups, *(r.groups for r in policy.rungs[:reached])]
    stored = [policy.group_members, *(r.group_members for r in policy.rungs)]
    if not any(groups):
        return False
    if any(user in members for members in stored[: 1 + reached]):
        return True  # stored already, as by an earlier attempt at this click
    if policy.open_to_channel or user in policy.allowed_users:
        return False
    listed = list(stored)
    for step, names in enumerate(groups):
        if names:
            members = await services.directory.known_members(names, max_age=GROUPS_FRESH_FOR)
            listed[step] = stored[step] if members is None else members
    if not any(user in members for members in listed):
        return False
    updated = await services.storage.interrupts.set_group_members(
        record, listed[0], now=services.clock.now(), asked_by=user, step_members=listed[1:]
    )
    return updated is not None
