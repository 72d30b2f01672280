"""The outbox keeps a request until every card it has reached is in Slack."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import later, make_record

from storage import Storage
from storage.records import InterruptRecord


async def _refused_then_escalated(storage: Storage, **where: str) -> InterruptRecord:
    """A request whose own card Slack refused (the app is not in its channel) until it
    escalated, its escalation card not posted yet."""
    record = await storage.interrupts.create_interrupt(
        make_record(
            expires_in=timedelta(hours=1),
            on_expiry="escalate",
            escalate_to_users=("UBOSS",),
            escalate_to_channel="CESCALATE",
            **where,
        )
    )
    [claimed] = await storage.interrupts.claim_outbox(later(seconds=30))
    assert await storage.interrupts.post_failed(claimed.id, "not_in_channel")
    [escalated] = await storage.interrupts.expire_due(later(hours=1))
    assert escalated.outcome == "escalated"
    return record


async def test_a_request_posted_before_its_escalation_card_stays_in_the_outbox_until_both_are(
    storage: Storage,
) -> None:
    """Its own card was refused until it escalated; the outbox posts the own card, and its
    poster stops before posting the escalation card: the outbox hands it out again (for
    that card alone), and not once both are posted."""
    record = await _refused_then_escalated(storage)
    [claimed] = await storage.interrupts.claim_outbox(later(hours=1))
    assert claimed.message_ts is None and claimed.escalation_unposted
    await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=later(hours=1))

    [again] = await storage.interrupts.claim_outbox(later(hours=1, minutes=1))
    assert again.id == record.id and again.message_ts == "1700.1" and again.escalation_unposted
    assert await storage.interrupts.set_escalation_message(
        record.id, "CESCALATE", "1700.2", step=1, now=later(hours=1, minutes=1)
    )
    assert await storage.interrupts.claim_outbox(later(hours=2)) == []


async def test_a_card_slack_refused_stays_in_the_outbox_once_its_escalation_card_is_posted(
    storage: Storage,
) -> None:
    """A request whose own channel refuses the app escalates to a channel that takes its
    card: the own card still waits in the outbox, posted at its next try or at once when
    the app is invited to its channel."""
    record = await _refused_then_escalated(storage, channel="CAPPROVALS")
    assert await storage.interrupts.set_escalation_message(
        record.id, "CESCALATE", "1700.0009", step=1, now=later(hours=1)
    )
    [waiting] = await storage.interrupts.claim_waiting("CAPPROVALS", later(hours=1, minutes=1))
    assert waiting.id == record.id and waiting.message_ts is None
    [again] = await storage.interrupts.claim_outbox(later(hours=2))
    assert again.id == record.id
    await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=later(hours=2))
    assert await storage.interrupts.claim_outbox(later(hours=3)) == []
