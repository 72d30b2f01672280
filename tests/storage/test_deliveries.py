"""Events API deliveries: the first delivery of an event id wins, a retry does not."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from storage import Storage


async def test_only_the_first_delivery_of_an_event_id_is_claimed(storage: Storage) -> None:
    assert await storage.deliveries.first("Ev0AAA")
    assert not await storage.deliveries.first("Ev0AAA")
    assert await storage.deliveries.first("Ev0BBB")


async def test_concurrent_deliveries_of_one_event_have_one_winner(storage: Storage) -> None:
    claims = await asyncio.gather(*(storage.deliveries.first("Ev0SAME") for _ in range(20)))
    assert claims.count(True) == 1


async def test_a_delivery_is_remembered_for_an_hour_under_the_prefix(
    storage: Storage, raw: aioredis.Redis
) -> None:
    await storage.deliveries.first("Ev0TTL")
    key = f"{storage.keys.prefix}:event:Ev0TTL"
    assert 3590_000 < await raw.pttl(key) <= 3600_000


async def test_a_signed_request_is_new_once_for_ten_minutes_among_many_at_once(
    storage: Storage, raw: aioredis.Redis
) -> None:
    """Each signature checked twice at once is new for exactly one of the two checks."""
    signatures = [f"v0={n:064x}" for n in range(50)]
    firsts = await asyncio.gather(*(storage.deliveries.first_signed(s) for s in signatures * 2))
    assert all(firsts[n] != firsts[n + 50] for n in range(50)), firsts
    assert not await storage.deliveries.first_signed(signatures[0])
    keys = [k async for k in raw.scan_iter(f"{storage.keys.prefix}:signed:*")]
    ttls = [await raw.pttl(key) for key in keys]
    assert len(keys) == 50 and all(599_000 < ttl <= 600_000 for ttl in ttls)


async def test_a_socket_mode_envelope_is_new_once_for_ten_minutes_however_many_ask(
    storage: Storage, raw: aioredis.Redis
) -> None:
    """Two processes given one envelope at once agree that one of them received it first."""
    firsts = await asyncio.gather(*(storage.deliveries.first_envelope("env-1") for _ in range(20)))
    assert firsts.count(True) == 1
    assert await storage.deliveries.first_envelope("env-2")
    assert 599_000 < await raw.pttl(f"{storage.keys.prefix}:envelope:env-1") <= 600_000
