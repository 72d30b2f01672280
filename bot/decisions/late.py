"""A decision refused because it came after its request's deadline, before the expiry
sweep stored what the deadline does: the expiry is made then, the same stored step the
sweep makes (once, whoever comes first), so what the clicker is told has happened."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

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
    batch card's items expire together: ``expire_items``."""
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


@dataclass(frozen=True, kw_only=True)
class LateItems:
    """What a click on a batch card past its items' deadline stored, and is told."""

    told: dict[int, str]
    """The text for each item refused as expired, by its place among the click's outcomes."""
    stored: bool
    """Whether this click stored any of their expiries: its card is then redrawn by it."""


async def expire_items(services: Services, outcomes: Sequence[DecideOutcome]) -> LateItems:
    """Make the expiries that the items of a batch card refused as ``expired`` missed (the
    step the sweep makes, once, whoever comes first) and say what each has stored. A
    batch click is not queued on the click stream: none of the clicks waiting there is
    its own."""
    missed = {
        place: outcome.record
        for place, outcome in enumerate(outcomes)
        if outcome.status == "refused" and outcome.reason == "expired" and outcome.record
    }
    if not missed:
        return LateItems(told={}, stored=False)
    rids = [record.id for record in missed.values()]
    made: list[ExpiryResult | None] = []
    try:
        now = services.clock.now()
        made = await services.storage.interrupts.expire_late_each(rids, now, own_clicks=0)
    except StorageError as exc:  # told only that their time is up: what is known stored
        log.warning("batch card of %s: expiries not made at a late click: %s", rids[0], exc)
    stored: dict[str, InterruptRecord] = {m.record.id: m.record for m in made if m}
    services.metrics.decisions["expired"] += sum(1 for m in made if m and m.outcome == "expired")
    unmade = [rid for rid in rids if rid not in stored]
    try:  # made by the sweep (or another click), or not yet: read as stored now
        read, _ = await services.storage.queries.many(unmade) if unmade else ([], [])
        stored |= {record.id: record for record in read}  # one not read: its time is up
    except StorageError as exc:
        log.warning("batch card of %s: items not read back at a late click: %s", rids[0], exc)
    told = {
        place: late_text(record, stored.get(record.id, record)) for place, record in missed.items()
    }
    return LateItems(told=told, stored=any(made))
