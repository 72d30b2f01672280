"""Approvers who are away (``/signoff away until <date> to @someone``): while they are,
their delegate is asked, and may decide, in their place; the card says for whom."""

from __future__ import annotations

import logging

from bot.services import Services
from storage.errors import StorageError

log = logging.getLogger(__name__)


async def with_stand_ins(
    services: Services,
    users: tuple[str, ...],
    members: tuple[str, ...] = (),
    *,
    requester: str,
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``users`` plus the delegates of those of ``users`` who are away now, and
    ``(delegate, for_user)`` pairs for them and for ``members`` (a group's: their delegates
    decide only while they are members, so they are not added). Storage counts a delegate
    and the person they stand in for as one: one vote, and never the requester's own
    approval. So nobody stands in for the ``requester``, and the requester, an approver in
    their own right or a delegate away too stands in for nobody: either would leave the
    request with fewer voices than it needs. When storage cannot tell, nobody is taken
    for away."""
    if not users and not members:
        return users, ()
    try:
        away = await services.storage.away.of((*users, *members), services.clock.now())
    except StorageError as exc:
        log.error("who is away not read; approvers asked as named: %s", exc)
        return users, ()
    stand_ins = tuple(
        (entry.delegate, user)
        for user, entry in away.items()
        if entry.delegate
        and entry.delegate not in away
        and entry.delegate not in (user, requester, *users, *members)
        and user != requester
    )
    delegates = (delegate for delegate, for_user in stand_ins if for_user in users)
    return tuple(dict.fromkeys((*users, *delegates))), stand_ins
