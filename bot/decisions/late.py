"""A decision refused because it came after its request's deadline, before the expiry
sweep stored what the deadline does: the expiry is made then, the same stored step the
sweep makes (once, whoever comes first), so what the clicker is told has happened."""

from __future__ import annotations

import logging

from bot.services import Services
from bot.ui.expiries import tell_expiry
from bot.ui.refusals import late_text, refusal_text
from storage.errors import StorageError
from storage.outcomes import DecideOutcome, ExpiryResult
from storage.records import InterruptRecord

log = logging.getLogger(__name__)


async def expired_text(services: Services, outcome: DecideOutcome, *, own_clicks: int) -> str:
    """What a decision refused as ``expired`` is told, once the expiry it missed is stored
    (its card and requester told in the background, as after the sweep). ``own_clicks``:
    the decision's own entries in the click stream (1 for a button click, 0 for a form),
    which do not hold the expiry back; other clicks waiting there do, being in time. A
    batch's items expire together, by the sweep."""
    missed = outcome.record
    if missed is None or missed.batch is not None:
        return refusal_text(outcome)
    made: ExpiryResult | None = None
    stored: InterruptRecord | None = missed
    try:
        now = services.clock.now()
        made = await services.storage.interrupts.expire_late(missed.id, now, own_clicks=own_clicks)
        stored = made.record if made else await services.storage.queries.get(missed.id)
    except StorageError as exc:  # told only that its time is up: what is known stored
        log.warning("interrupt %s: expiry not made at a late click: %s", missed.id, exc)
    if made is not None:
        services.background.spawn(tell_expiry(services, made), name=f"expired {missed.id}")
    return late_text(missed, stored)
