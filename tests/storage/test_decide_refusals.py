"""Who may decide, and from which card: a refused decision changes no key, byte for byte
(issue 3)."""

from __future__ import annotations

from datetime import timedelta

import redis.asyncio as aioredis
from storage_helpers import DIGEST, NOW, make_record, snapshot

from agent_runtime.interrupts import Decision
from storage import Storage


async def test_refusals_leave_every_key_byte_for_byte_unchanged(
    storage: Storage, raw: aioredis.Redis, key_prefix: str
) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(requested_by="UALICE", decisions=("approve", "reject"))
    )
    posted = await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.0001", now=NOW)
    assert posted is not None
    before = await snapshot(raw, key_prefix)
    decide = storage.interrupts.decide
    cases = [
        (record.id, "UMALLORY", Decision.approve(), DIGEST, {}, "not_allowed"),
        (record.id, "UALICE", Decision.approve(), DIGEST, {}, "self_approval"),
        (record.id, "UBOB", Decision.approve(), "0" * 32, {}, "wrong_digest"),
        (record.id, "UBOB", Decision.respond("x"), DIGEST, {}, "not_offered"),
        (
            record.id,
            "UBOB",
            Decision.approve(),
            DIGEST,
            {"channel": "COTHER", "message_ts": "1700.0001"},
            "wrong_message",
        ),
        ("run_1/int_nope", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        ("no-slash", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        ("run 1/int_x", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        ("run_1/int_{x}", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        (record.id, "U<!channel>", Decision.approve(), DIGEST, {}, "unknown"),
        (record.id, "UBOB", Decision.approve(), DIGEST, {}, None),
    ]
    for rid, user, decision, digest, origin, reason in cases[:-1]:
        out = await decide(rid, user, decision, args_digest=digest, now=NOW, **origin)
        assert (out.status, out.reason) == ("refused", reason), (rid, user)
        assert await snapshot(raw, key_prefix) == before, reason
    rid, user, decision, digest, origin, _ = cases[-1]
    ok = await decide(
        rid,
        user,
        decision,
        args_digest=digest,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0001",
    )
    assert ok.status == "recorded"


async def test_empty_allow_list_means_nobody_unless_open_to_channel_and_clicked_there(
    storage: Storage,
) -> None:
    closed = await storage.interrupts.create_interrupt(make_record(call_id="c1", allowed_users=()))
    opened = await storage.interrupts.create_interrupt(
        make_record(call_id="c2", allowed_users=(), open_to_channel=True)
    )
    decide = storage.interrupts.decide
    out = await decide(closed.id, "UANY", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert out.reason == "not_allowed"
    out = await decide(opened.id, "UANY", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert out.reason == "not_allowed"  # from no card (Home): nothing shows a channel member
    on_card = {"channel": "CAPPROVALS", "message_ts": "1.0"}
    out = await decide(
        opened.id, "UANY", Decision.approve(), args_digest=DIGEST, now=NOW, **on_card
    )
    assert out.status == "recorded"


async def test_group_members_captured_at_posting_may_decide(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(allowed_users=(), allowed_groups=("SOPS",), group_members=("UDAVE",))
    )
    out = await storage.interrupts.decide(
        record.id, "UDAVE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    assert out.status == "recorded"


async def test_a_click_between_the_post_and_its_recording_counts_from_its_channel_only(
    storage: Storage,
) -> None:
    """Slack shows the card before the bot stores its ts (and its poster may die there): a
    click in that instant counts when it comes from the card's channel, and records where
    the card is; from any other channel it is refused."""
    record = await storage.interrupts.create_interrupt(
        make_record(channel="CAPPROVALS", decisions=("approve", "reject"))
    )
    decide = storage.interrupts.decide
    elsewhere = await decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="COTHER",
        message_ts="1700.0001",
    )
    assert (elsewhere.status, elsewhere.reason) == ("refused", "wrong_message")
    early = await decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0001",
    )
    assert early.status == "recorded" and early.state == "approved"
    # The click said where the card is: updates and the run's thread go there.
    assert early.record is not None and early.record.message_ts == "1700.0001"
    assert early.record.thread_ts == "1700.0001"


async def test_a_first_vote_from_an_unrecorded_card_keeps_it_from_being_posted_again(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(channel="CAPPROVALS", min_approvals=2)
    )
    vote = await storage.interrupts.decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0002",
    )
    assert vote.status == "progress"
    assert await storage.interrupts.claim_outbox(NOW + timedelta(hours=1)) == []
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.message_ts == "1700.0002"


async def test_a_vote_on_an_escalation_card_is_not_taken_for_where_the_own_card_is(
    storage: Storage,
) -> None:
    """A request escalated before its own card's ts was stored (Slack slow, or its poster
    died there): a vote on the escalation card does not record that card as the request's
    own, so a click on the own card, in the request's channel, still counts."""
    record = await storage.interrupts.create_interrupt(
        make_record(
            channel="CAPPROVALS",
            min_approvals=2,
            expires_in=timedelta(hours=1),
            on_expiry="escalate",
            escalate_to_users=("UBOSS",),
            escalate_to_channel="CESCALATE",
        )
    )
    [escalated] = await storage.interrupts.expire_due(NOW + timedelta(hours=1))
    assert escalated.outcome == "escalated"
    now = NOW + timedelta(hours=1, minutes=1)
    card = await storage.interrupts.set_escalation_message(
        record.id, "CESCALATE", "1700.0009", step=1, now=now
    )
    assert card
    decide = storage.interrupts.decide
    vote = await decide(
        record.id,
        "UBOSS",
        Decision.approve(),
        args_digest=DIGEST,
        now=now,
        channel="CESCALATE",
        message_ts="1700.0009",
    )
    assert vote.status == "progress"
    assert vote.record is not None and vote.record.message_ts is None
    assert vote.record.thread_ts is None
    own = await decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=now,
        channel="CAPPROVALS",
        message_ts="1700.0001",
    )
    assert (own.status, own.reason, own.state) == ("recorded", None, "approved")
    assert own.record is not None and own.record.message_ts == "1700.0001"
