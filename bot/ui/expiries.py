"""What follows an expiry stored by the sweep, or by a click that came after the deadline:
the card redrawn, the requester and the approvers' App Homes told, or the escalation
step's card posted; and what follows an approval under trust taken back by the sweep."""

from __future__ import annotations

from bot.services import Services
from storage.errors import StorageError
from storage.outcomes import ExpiryResult
from storage.records import InterruptRecord

from .cards import trust_lapsed
from .home import refresh_homes
from .notes import post_mrkdwn
from .posting import post_escalation
from .redraws import update_message
from .requester import tell_decided, tell_escalated


async def tell_expiry(services: Services, result: ExpiryResult) -> None:
    """Show an expiry (``expired``, approved by default among them), an escalation
    (``escalated``) or an approval under trust taken back (``reopened``) where it matters;
    a released undo window is the caller's."""
    record = result.record
    if result.outcome == "reopened":  # a trust's approval taken back: a person is asked
        await update_message(services, record)
        if record.undone is not None:
            thread = record.thread_ts or record.message_ts
            text = trust_lapsed(record, record.undone)
            await post_mrkdwn(services, channel=record.channel, thread_ts=thread, text=text)
        await refresh_homes(services, record)
        return
    if result.outcome == "expired":
        services.metrics.decisions["expired"] += 1
        await update_message(services, record)
        await tell_decided(services, record)
        await refresh_homes(services, record)
        return
    # Escalated: a card the escalation approvers decide, in their channel or the thread.
    escalated = await post_escalation(services, record)
    await update_message(services, escalated or record)
    if await still_pending(services, record):  # not decided since it was escalated
        await tell_escalated(services, escalated or record)


async def still_pending(services: Services, record: InterruptRecord) -> bool:
    """Whether ``record``, read by a sweep moments ago, is still waiting for a decision
    (taken as it was found when Redis cannot say)."""
    try:
        latest = await services.storage.queries.get(record.id)
    except StorageError:
        return True
    return latest is not None and latest.state == "pending" and latest.held is None
