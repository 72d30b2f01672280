"""Requests open to everyone in their channel, listed for the channels someone is in (App
Home), a page at a time."""

from __future__ import annotations

from storage_helpers import NOW, later, make_record

from agent_runtime.interrupts import Decision
from agent_runtime.messages import args_digest
from storage import Storage

DIGEST = args_digest({"path": "/tmp/old"})


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
