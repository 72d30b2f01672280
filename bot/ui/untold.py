"""Refusals a click decider stored but did not tell its clicker (it died first): told by
the scheduler once the decider's lease on them lapses, from the record as stored now."""

from __future__ import annotations

import logging
from typing import cast

from bot.services import Services
from storage.errors import CorruptRecordError, StorageError
from storage.outcomes import DecideOutcome, RefusalReason
from storage.records import InterruptRecord
from storage.refusals import LeasedRefusal

from .posting import post_ephemeral
from .refusals import late_text, refusal_text

log = logging.getLogger(__name__)


async def tell_untold_refusals(services: Services) -> int:
    """Tell each clicker the refusal its dead decider stored and did not tell; how many."""
    told = 0
    for leased in await services.storage.refusals.claim(services.clock.now()):
        refusal = leased.refusal
        try:
            record = await services.storage.queries.get(refusal.record_id)
        except CorruptRecordError:
            record = None  # told why in the words that need no record
        await post_ephemeral(
            services,
            channel=refusal.channel,
            user=refusal.user,
            thread_ts=refusal.thread_ts or None,
            text=_text(leased, record),
        )
        services.metrics.refusals[leased.reason] += 1
        told += 1
        try:
            await services.storage.refusals.done(leased)
        except StorageError as exc:  # told again once its lease lapses
            log.error("refusal of click %s told, but still queued: %s", refusal.click, exc)
    return told


def _text(leased: LeasedRefusal, record: InterruptRecord | None) -> str:
    """What the decider would have told, as the record stands now (an expiry it missed
    is stored by now, by a later click or the sweep)."""
    reason = cast(RefusalReason, leased.reason)
    if reason == "expired" and record is not None:
        return late_text(record, record)
    return refusal_text(DecideOutcome(status="refused", reason=reason, record=record))
