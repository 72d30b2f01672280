"""What the requests API reads off a new request's body beyond its fields: the channels
it may post in, what a retry must repeat, and how long it may wait for a decision."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from .schemas import NewRequest


def request_digest(body: NewRequest) -> str:
    """What a retry under the same key must repeat: all but ``acts_on``, which a retried
    gate's check may print anew (approving the card then asks again about the change)."""
    return hashlib.sha256(body.model_dump_json(exclude={"acts_on"}).encode()).hexdigest()


def longest_wait(body: NewRequest) -> timedelta:
    """How long the request may wait for a decision at most: its expiry, then each step of
    its escalation; what it asked is kept at least that long, as its record is."""
    waits = [body.expires_in]
    if body.on_expiry == "escalate":
        waits.append(body.escalate_expires_in or body.expires_in)
        waits += [step.expires_in for step in body.ladder]
    return timedelta(seconds=sum(waits))


def request_channels(body: NewRequest) -> list[tuple[str, str]]:
    """Each channel the request may post a card in, with the field naming it: its own, its
    escalation's and each ladder step's (a step without one posts in the request's)."""
    named = [("channel", body.channel)]
    if body.escalate_channel:
        named.append(("escalate_channel", body.escalate_channel))
    named += [(f"ladder.{n}.channel", s.channel) for n, s in enumerate(body.ladder) if s.channel]
    return named
