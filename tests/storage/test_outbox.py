"""The outbox keeps a request until every card it has reached is in Slack."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import later, make_record

from storage import Storage


async def test_a_request_posted_before_its_escalation_card_stays_in_the_outbox_until_both_are(
    storage: Storage,
) -> None:
    """Its own card was refused until it escalated; the outbox posts the own card, and its
    poster stops before posting the escalation card: the outbox hands it out again (for
    that card alone), and not once both are posted."""
    record = await storage.interrupts.create_interrupt(
        make_record(
            expires_in=timedelta(hours=1),
            on_expiry="escalate",
            escalate_to_users=("UBOSS",),
            escalate_to_channel="CESCALATE",
        )
    )
    [claimed] = await storage.interrupts.claim_outbox(later(seconds=30))
    assert await storage.interrupts.post_failed(claimed.id, "not_in_channel")
    [escalated] = await storage.interrupts.expire_due(later(hours=1))
    assert escalated.outcome == "escalated"
    [claimed] = await storage.interrupts.claim_outbox(later(hours=1))
    assert claimed.message_ts is None and claimed.escalation_unposted
    await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=later(hours=1))

    [again] = await storage.interrupts.claim_outbox(later(hours=1, minutes=1))
    assert again.id == record.id and again.message_ts == "1700.1" and again.escalation_unposted
    assert await storage.interrupts.set_escalation_message(
        record.id, "CESCALATE", "1700.2", step=1, now=later(hours=1, minutes=1)
    )
    assert await storage.interrupts.claim_outbox(later(hours=2)) == []
