"""Refusals a click decider stored but did not tell its clicker (it died first): told by
the scheduler once the decider's lease on them lapses, from the record as stored now.
Whoever tells one holds its lease while Slack takes the telling, however slow, so no
other process tells it too."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable
from datetime import datetime
from typing import cast

from bot.services import Services
from storage.errors import CorruptRecordError, StorageError
from storage.outcomes import DecideOutcome, RefusalReason
from storage.records import InterruptRecord
from storage.refusals import LeasedRefusal

from .holding import held_while
from .posting import post_ephemeral
from .refusals import late_text, refusal_text

log = logging.getLogger(__name__)


async def tell_untold_refusals(services: Services) -> int:
    """Tell each clicker the refusal its dead decider stored and did not tell; how many."""
    leased = await services.storage.refusals.claim(services.clock.now())
    await asyncio.gather(*(_tell(services, each) for each in leased))
    return len(leased)


async def holding_refusal(
    services: Services, shard: int, member: str, leased_until: datetime, tell: Awaitable[None]
) -> datetime:
    """Await ``tell``, the telling of refusal ``member`` of ``shard``, holding its lease
    (ending at ``leased_until``); the lease's end then."""

    def renew(held: datetime, until: datetime) -> Awaitable[bool]:
        return services.storage.refusals.hold(shard, member, held, until)

    return await held_while(services, tell, leased_until, renew)


async def _tell(services: Services, leased: LeasedRefusal) -> None:
    refusal = leased.refusal
    try:
        record = await services.storage.queries.get(refusal.record_id)
    except CorruptRecordError:
        record = None  # told why in the words that need no record
    telling = post_ephemeral(
        services,
        channel=refusal.channel,
        user=refusal.user,
        thread_ts=refusal.thread_ts or None,
        text=_text(leased, record),
    )
    until = leased.leased_until
    held = await holding_refusal(services, leased.shard, leased.member, until, telling)
    services.metrics.refusals[leased.reason] += 1
    try:
        await services.storage.refusals.done(dataclasses.replace(leased, leased_until=held))
    except StorageError as exc:  # told again once its lease lapses
        log.error("refusal of click %s told, but still queued: %s", refusal.click, exc)


def _text(leased: LeasedRefusal, record: InterruptRecord | None) -> str:
    """What the decider would have told, as the record stands now (an expiry it missed
    is stored by now, by a later click or the sweep)."""
    reason = cast(RefusalReason, leased.reason)
    if reason == "expired" and record is not None:
        return late_text(record, record)
    return refusal_text(DecideOutcome(status="refused", reason=reason, record=record))
