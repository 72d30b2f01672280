"""Storage fixtures: a connected Storage under a fresh prefix, and a raw byte client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from storage import Storage, connect


@pytest.fixture
async def storage(redis_url: str, key_prefix: str) -> AsyncIterator[Storage]:
    store = await connect(redis_url, prefix=key_prefix)
    yield store
    await store.close()


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()
