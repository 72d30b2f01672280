"""The webhook outbox's leases: a sender whose lease ran out changes nothing of a delivery
another sender took over."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import NOW, later

from storage import Storage
from storage.webhooks import FINISHED, WebhookDelivery

DELIVERY = WebhookDelivery(
    id="1700000000000-0",
    url="https://hooks.example.com/signoff",
    client="nightly-cleanup",
    event="request.approved",
    body="{}",
    created_at=NOW,
)


async def test_a_stalled_senders_retry_leaves_a_delivery_another_sender_finished(
    storage: Storage,
) -> None:
    """The first sender stalls past its lease; the second takes the delivery over and
    delivers it. The first one's failed attempt then queues nothing: the same event stored
    again is not delivered a second time."""
    webhooks = storage.webhooks
    assert await webhooks.add(DELIVERY, due=NOW)
    [stalled] = await webhooks.claim_due(NOW)
    [taken_over] = await webhooks.claim_due(later(seconds=61))
    assert not await webhooks.retry(stalled, at=later(seconds=65))  # the second one's now
    assert await storage.client.raw.zscore(storage.keys.webhooks, DELIVERY.id) == (
        taken_over.leased_until_ms
    )
    await webhooks.done(taken_over.delivery.id)
    assert not await webhooks.retry(stalled, at=later(seconds=70))
    assert await storage.client.raw.get(storage.keys.webhook(DELIVERY.id)) == FINISHED
    assert not await webhooks.add(DELIVERY, due=later(seconds=80))  # the event handled again
    assert await webhooks.claim_due(later(hours=1)) == []
    assert await webhooks.waiting() == 0


async def test_a_failed_attempt_is_counted_and_tried_again_while_its_lease_holds(
    storage: Storage,
) -> None:
    webhooks = storage.webhooks
    await webhooks.add(DELIVERY, due=NOW)
    [leased] = await webhooks.claim_due(NOW, lease=timedelta(seconds=60))
    assert await webhooks.retry(leased, at=later(seconds=5))
    assert await webhooks.claim_due(later(seconds=4)) == []
    [again] = await webhooks.claim_due(later(seconds=5))
    assert again.delivery.attempts == 1
