"""Strands' ``Storage`` protocol on a real Redis: bytes round-trip unchanged, ``list``
answers a prefix in key order, it works from the fresh event loop Strands' synchronous
hooks call it from, and an unreachable server is Strands' own ``StorageError``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis
from strands._async import run_async
from strands.types.exceptions import StorageError

from signoff.strands_storage import RedisStorage
from storage.embedded_cluster import EmbeddedCluster


@pytest.fixture
def blobs(redis_url: str, key_prefix: str) -> Iterator[RedisStorage]:
    store = RedisStorage(redis_url, prefix=key_prefix)
    yield store
    store.close()


async def test_values_round_trip_byte_for_byte_and_delete_is_idempotent(
    blobs: RedisStorage,
) -> None:
    data = bytes(range(256))  # not UTF-8: nothing decodes it on the way
    await blobs.write("session/s1/snapshot_latest.json", data)
    assert await blobs.read("session/s1/snapshot_latest.json") == data
    assert await blobs.read("session/s1/missing.json") is None
    await blobs.write("session/s1/snapshot_latest.json", b"{}")
    assert await blobs.read("session/s1/snapshot_latest.json") == b"{}"
    await blobs.delete("session/s1/snapshot_latest.json")
    await blobs.delete("session/s1/snapshot_latest.json")
    assert await blobs.read("session/s1/snapshot_latest.json") is None
    assert await blobs.list("") == []


async def test_list_answers_a_prefix_with_full_keys_in_order(blobs: RedisStorage) -> None:
    """In UTF-8 byte order, as Redis compares: 'é' (C3 A9) < 'ā' (C4 81) < '日' (E6 97 A5),
    all above the two bytes of U+00FF (C3 BF) that once bounded a prefix."""
    for key in (
        "session/b/x",
        "session/a/z",
        "session/a/日本",
        "session/a/y",
        "session/a/ā",
        "session/a/é",
        "session/ab/w",
        "memory/m",
    ):
        await blobs.write(key, b"1")
    under_a = ["session/a/y", "session/a/z", "session/a/é", "session/a/ā", "session/a/日本"]
    assert await blobs.list("session/a/") == under_a
    assert await blobs.list("session/a") == [*under_a, "session/ab/w"]
    assert await blobs.list("session/a/日") == ["session/a/日本"]
    assert await blobs.list("") == ["memory/m", *under_a, "session/ab/w", "session/b/x"]
    await blobs.delete("session/a/y")
    assert await blobs.list("session/a/") == under_a[1:]


async def test_it_answers_from_a_fresh_event_loop_in_another_thread(blobs: RedisStorage) -> None:
    """Strands' snapshot manager saves from synchronous hooks through ``run_async``."""
    await blobs.write("session/s2/k", b"from the agent's loop")
    read = await asyncio.to_thread(run_async, lambda: blobs.read("session/s2/k"))
    assert read == b"from the agent's loop"
    await asyncio.to_thread(run_async, lambda: blobs.write("session/s2/k", b"from a thread"))
    assert await blobs.read("session/s2/k") == b"from a thread"


async def test_why_it_runs_a_synchronous_client_an_async_one_fails_from_that_loop(
    redis_url: str,
) -> None:
    """redis-py's asyncio client, once used on the agent's loop, refuses Strands' call
    from its fresh loop: ``RedisStorage`` runs the synchronous client in a thread instead."""
    client = aioredis.Redis.from_url(redis_url)
    await client.ping()
    # A reply that has to be waited for (a blocking pop that times out after 0.1 s), so the
    # connection's reader waits on the other loop whatever the timing.
    with pytest.raises(RuntimeError, match="attached to a different loop"):
        await asyncio.to_thread(run_async, lambda: client.blpop(["strands:nothing"], 0.1))
    await client.aclose()


async def test_an_unreachable_server_is_a_storage_error_naming_the_key() -> None:
    gone = RedisStorage("redis://127.0.0.1:1/0", retries=1)
    with pytest.raises(StorageError, match="could not read 'session/s3/k'"):
        await gone.read("session/s3/k")
    gone.close()


async def test_sessions_live_on_a_redis_cluster_too(
    redis_cluster: EmbeddedCluster, key_prefix: str
) -> None:
    """Signoff on Redis Cluster: the same ``redis+cluster://`` URL keeps Strands' sessions,
    each write and its index entry still one transaction."""
    store = RedisStorage(redis_cluster.url, prefix=key_prefix)
    try:
        await store.write("session/s1/snapshot_latest.json", b"{}")
        await store.write("session/s2/snapshot_latest.json", b"[]")
        assert await store.read("session/s1/snapshot_latest.json") == b"{}"
        assert await store.list("session/") == [
            "session/s1/snapshot_latest.json",
            "session/s2/snapshot_latest.json",
        ]
        await store.delete("session/s1/snapshot_latest.json")
        assert await store.list("") == ["session/s2/snapshot_latest.json"]
    finally:
        store.close()
