"""Requests open to everyone in their channel, listed for the channels someone is in (App
Home), a page at a time; those an earlier version stored are indexed once on connect."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import DIGEST, NOW, later, make_record

from agent_runtime.interrupts import Decision
from storage import Storage, connect
from storage.open_index import index_earlier_open_requests


async def test_requests_open_to_a_channel_are_listed_across_many_channels_with_counts(
    storage: Storage,
) -> None:
    """Oldest first across every channel asked about, a page at a time, counted whole;
    a request naming its approvers, a decided one, and a channel whose id is a prefix of
    another's add nothing."""
    open_ones = [
        make_record(
            run_id=f"run_{n:02d}",
            channel=f"CTEAM{n:02d}",
            now=later(seconds=n),
            open_to_channel=True,
        )
        for n in range(30)
    ]
    for record in open_ones:
        await storage.interrupts.create_interrupt(record)
    await storage.interrupts.create_interrupt(make_record(run_id="run_named", channel="CTEAM00"))
    decided = make_record(run_id="run_gone", channel="CTEAM01", open_to_channel=True)
    await storage.interrupts.create_interrupt(decided)
    await storage.interrupts.decide(
        decided.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    asked = [*(f"CQUIET{n:03d}" for n in range(300)), *(f"CTEAM{n:02d}" for n in range(30))]
    asked.append("CTEAM0")
    first = await storage.queries.pending_open_in(asked, limit=25)
    assert [r.id for r in first.records] == [r.id for r in open_ones[:25]]
    assert (first.before, first.total) == (0, 30)
    rest = await storage.queries.pending_open_in(asked, limit=25, cursor=first.next_cursor)
    assert [r.id for r in rest.records] == [r.id for r in open_ones[25:]]
    assert (rest.before, rest.total, rest.next_cursor) == (25, 30, None)
    # Posted elsewhere, it is listed under the channel it was posted in.
    await storage.interrupts.mark_posted(open_ones[0].id, "CELSEWHERE", "1.1", now=NOW)
    moved = await storage.queries.pending_open_in(["CTEAM00", "CELSEWHERE"])
    assert [(r.id, r.channel) for r in moved.records] == [(open_ones[0].id, "CELSEWHERE")]
    assert (await storage.queries.pending_open_in([])).records == ()


async def test_open_requests_an_earlier_version_stored_are_indexed_once_on_connect(
    storage: Storage, redis_url: str, key_prefix: str
) -> None:
    keys, raw = storage.keys, storage.client.raw
    waiting = make_record(run_id="run_a", channel="CTEAM", open_to_channel=True)
    decided = make_record(run_id="run_b", channel="CTEAM", open_to_channel=True)
    named = make_record(run_id="run_c", channel="CTEAM")
    escalated = make_record(
        run_id="run_d",
        channel="CTEAM",
        expires_in=timedelta(seconds=1),
        on_expiry="escalate",
        escalate_to_channel="CESCALATE",
        escalate_open_to_channel=True,
    )
    for record in (waiting, decided, named, escalated):
        await storage.interrupts.create_interrupt(record)
    [step] = await storage.interrupts.expire_due(later(seconds=1))
    assert step.outcome == "escalated"
    # As an earlier version left them: no open index, and no marker saying it was built.
    await raw.delete(*(keys.by_open_channel(s) for s in keys.all_shards), keys.open_index_built)
    assert (await storage.queries.pending_open_in(["CTEAM"])).records == ()
    await storage.interrupts.decide(
        decided.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )

    again = await connect(redis_url, prefix=key_prefix)
    try:
        page = await again.queries.pending_open_in(["CTEAM"])
        assert [r.id for r in page.records] == [waiting.id] and page.total == 1
        # Escalated to a step open to another channel: listed for that channel's members.
        page = await again.queries.pending_open_in(["CESCALATE"])
        assert [r.id for r in page.records] == [escalated.id]
        # Done once: an entry removed now is not added back by the next connection.
        await raw.delete(*(keys.by_open_channel(s) for s in keys.all_shards))
        assert await index_earlier_open_requests(again.client, keys) == 0
    finally:
        await again.close()
