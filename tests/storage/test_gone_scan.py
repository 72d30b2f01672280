"""The check of the due indexes for pending records Redis lost (evicted, or deleted by
hand): paged, it finds those and only those, changes nothing, and each found one is
then claimed by one caller, as the expiry sweep claims it."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from storage_helpers import DIGEST, NOW, make_record, snapshot

from agent_runtime.interrupts import Decision
from storage import GoneScan, LostRecord, Storage


async def _scan_all(storage: Storage, *, count: int) -> tuple[set[str], int]:
    """Every id a check finds gone, read page by page from the start; and how many pages."""
    cursors = dict.fromkeys(storage.keys.all_shards, 0)
    gone: set[str] = set()
    pages = 0
    while cursors:
        page: GoneScan = await storage.interrupts.scan_gone(cursors, count=count)
        gone |= set(page.gone)
        cursors = dict(page.cursors)
        pages += 1
    return gone, pages


async def test_a_paged_check_finds_the_lost_pending_records_and_only_those(
    storage: Storage, key_prefix: str
) -> None:
    day = timedelta(days=1)  # well before their time is up
    many = [make_record(run_id="run_many", call_id=f"c{n}", expires_in=day) for n in range(200)]
    await storage.interrupts.create_interrupts(many)
    others = [make_record(run_id=f"run_{n}", call_id="c1", expires_in=day) for n in range(6)]
    for record in others:
        await storage.interrupts.create_interrupts([record])
    decided = others[0]
    await storage.interrupts.decide(
        decided.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    raw = storage.client.raw
    lost = {many[7].id, many[150].id, others[3].id}
    for rid in lost:
        assert await raw.delete(storage.keys.record(rid)) == 1
    assert await _scan_all(storage, count=1000) == (lost, 1)

    before = await snapshot(raw, key_prefix)
    gone, pages = await _scan_all(storage, count=20)
    assert gone == lost and pages > 1, pages
    assert await snapshot(raw, key_prefix) == before, "a check only reads"

    # Two schedulers found them: each is claimed once, and then no longer found.
    claims = [storage.interrupts.claim_gone(rid, NOW) for rid in sorted(lost) for _ in (1, 2)]
    claimed = [c for c in await asyncio.gather(*claims) if c is not None]
    assert all(isinstance(c, LostRecord) for c in claimed)
    assert sorted(c.record_id for c in claimed) == sorted(lost)
    trail = await storage.audit.read(count=500)
    assert sorted(e.record_id for e in trail if e.event == "lost") == sorted(lost)
    assert await _scan_all(storage, count=1000) == (set(), 1)
    assert await storage.queries.pending_count() == 200 + 6 - 1 - len(lost)
