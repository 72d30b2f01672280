"""Requests open to everyone in their channel, listed for the channels someone is in (App
Home), a page at a time; those an earlier version stored are indexed once on connect."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import DIGEST, NOW, later, make_record

from agent_runtime.interrupts import Decision
from storage import Storage, connect
from storage.open_index import index_earlier_open_requests
from storage.owner_index import read_up_to
from storage.records import to_ms


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


async def server_calls(storage: Storage, command: str | None = None) -> int:
    """Commands the server (every primary, on a cluster) ran: ``command`` only, or all of
    them but INFO, which reads these counts."""
    raw = storage.client.raw
    if storage.client.cluster is None:
        nodes = [await raw.info("commandstats")]
    else:
        nodes = list((await raw.info("commandstats", target_nodes="primaries")).values())
    return sum(
        stats["calls"]
        for node in nodes
        for name, stats in node.items()
        if (name == f"cmdstat_{command}" if command else name != "cmdstat_info")
    )


async def test_listing_for_someone_in_a_thousand_channels_costs_what_is_open_in_them(
    storage: Storage,
) -> None:
    """Three requests open in two of 1,000 channels: listed, counted and paged with a few
    commands (the index of each shard read at once), not two per channel and shard."""
    opened = [
        make_record(run_id=f"run_{n}", channel=channel, now=later(seconds=n), open_to_channel=True)
        for n, channel in enumerate(["C0500", "C0042", "C0500"])
    ]
    for record in opened:
        await storage.interrupts.create_interrupt(record)
    await storage.interrupts.create_interrupt(make_record(run_id="run_named", channel="C0042"))
    asked = [f"C{n:04d}" for n in range(1000)]

    calls = await server_calls(storage)
    first = await storage.queries.pending_open_in(asked, limit=2)
    spent = await server_calls(storage) - calls
    assert [r.id for r in first.records] == [r.id for r in opened[:2]]
    assert (first.before, first.total) == (0, 3)
    assert spent == len(storage.keys.all_shards) + 2  # each shard's index, each record
    calls = await server_calls(storage)
    rest = await storage.queries.pending_open_in(asked, limit=2, cursor=first.next_cursor)
    assert await server_calls(storage) - calls == len(storage.keys.all_shards) + 1
    assert [r.id for r in rest.records] == [opened[2].id]
    assert (rest.before, rest.total, rest.next_cursor) == (2, 3, None)


async def test_a_shard_index_too_large_to_read_at_once_is_asked_channel_by_channel(
    storage: Storage,
) -> None:
    """Past the entries read at once, each channel asked about is looked up alone: the same
    list, order, counts and pages, the last page for a cursor past the end, and an entry
    whose record is gone cleaned from the index."""
    keys, raw = storage.keys, storage.client.raw
    channels = ["CAAA", "CTEAM1", "CTEAM2"]  # CAAA sorts before the filler, read at once
    opened = [
        make_record(
            run_id=f"run_{n}", channel=channels[n % 3], now=later(seconds=n), open_to_channel=True
        )
        for n in range(8)
    ]
    for record in opened:
        await storage.interrupts.create_interrupt(record)
    filler = {f"CFILL{n:04d}\0{n}\0run_fill/int_{n}": 0 for n in range(read_up_to(3) + 1)}
    for shard in keys.all_shards:
        await raw.zadd(keys.by_open_channel(shard), filler)
    await raw.delete(keys.record(opened[7].id))  # expired while pending

    lookups = await server_calls(storage, "zlexcount")
    pages = [await storage.queries.pending_open_in(channels, limit=3)]
    assert await server_calls(storage, "zlexcount") > lookups  # asked channel by channel
    while pages[-1].next_cursor:
        cursor = pages[-1].next_cursor
        pages.append(await storage.queries.pending_open_in(channels, limit=3, cursor=cursor))
    assert [[r.id for r in page.records] for page in pages] == [
        [r.id for r in opened[0:3]],
        [r.id for r in opened[3:6]],
        [opened[6].id],
    ]
    assert [(page.before, page.total) for page in pages] == [(0, 8), (3, 8), (6, 8)]
    member = f"CTEAM1\0{to_ms(opened[7].created_at)}\0{opened[7].id}"
    assert (
        await raw.zscore(keys.by_open_channel(keys.shard_of_record(opened[7].id)), member) is None
    )

    # The last page's request decided: its cursor now reads the (shorter) list's last page.
    await storage.interrupts.decide(
        opened[6].id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    last = await storage.queries.pending_open_in(channels, limit=3, cursor=pages[1].next_cursor)
    assert [r.id for r in last.records] == [r.id for r in opened[3:6]]
    assert (last.before, last.total, last.next_cursor) == (3, 6, None)
