"""Posting what the outbox hands out: the cards Slack has not taken yet, and the escalation
steps' cards. The scheduler drains it on every tick; an invite of the app to a channel
posts at once the cards waiting for that channel, through the same leases."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.services import Services
from storage.records import InterruptRecord

from .posting import post_escalation, post_interrupt
from .redraws import update_message

log = logging.getLogger(__name__)


async def post_claimed(services: Services, records: Sequence[InterruptRecord]) -> int:
    """Post the outbox entries leased to this caller (their cards, or their escalation
    steps' cards); the number posted."""
    posted = 0
    for record in records:
        if record.message_ts:  # posted, but not its escalation step's card
            posted += await _repost_escalation(services, record)
        elif (first := await post_interrupt(services, record, again=True)) is not None:
            posted += 1
            if first.escalation_unposted:  # escalated while Slack had neither card
                await _repost_escalation(services, first)
    return posted


async def post_waiting_in(services: Services, channel: str) -> int:
    """Post now the cards waiting in the outbox because ``channel`` refused the app, which
    was just added to it; one another poster holds is left to it. The number posted."""
    waiting = await services.storage.interrupts.claim_waiting(channel, services.clock.now())
    if waiting:
        log.info("app added to %s: posting %d waiting cards", channel, len(waiting))
    return await post_claimed(services, waiting)


async def _repost_escalation(services: Services, record: InterruptRecord) -> bool:
    """Post the escalation card Slack did not take; every copy is redrawn once it is posted,
    or when Slack's answer changed (the cards say why it is not posted). Whether posted."""
    escalated = await post_escalation(services, record, again=True)
    if escalated is None:
        return False
    posted = not escalated.escalation_unposted
    if posted or escalated.escalation_error != record.escalation_error:
        await update_message(services, escalated)
    return posted
