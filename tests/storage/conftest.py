"""Storage fixtures: every storage test runs on a single Redis and on a Redis Cluster
(the ``redis_url`` here names one, then the other), and a raw byte client of either; and
``one_server``, storage on the embedded single server alone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from storage import EmbeddedRedis, Storage, connect
from storage.cluster import cluster_redis, is_cluster_url, parse_cluster_url


@pytest.fixture(params=["single", "cluster"])
def redis_url(request: pytest.FixtureRequest) -> str:
    if request.param == "cluster":
        return str(request.getfixturevalue("redis_cluster").url)
    return str(request.getfixturevalue("redis_server").url)


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    if is_cluster_url(redis_url):
        cluster = cluster_redis(parse_cluster_url(redis_url), max_connections=8)
        yield cluster  # type: ignore[misc]  # answers the same commands
        await cluster.aclose()
        return
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def one_server(redis_server: EmbeddedRedis, key_prefix: str) -> AsyncIterator[Storage]:
    storage = await connect(redis_server.url, prefix=key_prefix)
    yield storage
    await storage.close()
