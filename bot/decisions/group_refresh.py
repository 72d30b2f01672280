"""Approvers who joined a user group since its members were last stored.

An interrupt stores its groups' members as Slack listed them (when posted, then at each
of the scheduler's checks), so a newcomer to a rotation (a new on-call engineer) could
be refused for minutes. When someone who is not listed acts on an interrupt with groups,
Slack is asked again (at most once a minute per group) and, if they are a member now, the
stored members are replaced.
"""

from __future__ import annotations

from datetime import timedelta

from bot.services import Services
from storage.records import InterruptRecord

GROUPS_FRESH_FOR = timedelta(minutes=1)
"""How old a group's member list may be when it settles whether someone may decide."""


async def refresh_groups(services: Services, record: InterruptRecord | None, user: str) -> bool:
    """Whether ``user`` is among the stored members of ``record``'s groups after this call:
    when they were not but Slack now lists them, the stored members are replaced."""
    if record is None or record.state != "pending" or not record.policy.allowed_groups:
        return False
    policy = record.policy
    if user in policy.group_members:
        return True  # stored already, as by an earlier attempt at this click
    if policy.open_to_channel or user in policy.allowed_users:
        return False
    groups = policy.allowed_groups
    members = await services.directory.known_members(groups, max_age=GROUPS_FRESH_FOR)
    if members is None or user not in members:
        return False
    stored = await services.storage.interrupts.set_group_members(
        record, members, now=services.clock.now(), asked_by=user
    )
    return stored is not None
