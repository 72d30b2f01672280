"""Fixtures shared by every suite: one real Redis-compatible server per test session,
and one local 3-primary Redis Cluster for the suites that also run on a cluster.

The server is the embedded one the product itself uses (storage.EmbeddedRedis), on a
private unix socket; the cluster is storage.EmbeddedCluster, from the same binary on
loopback ports. If either cannot start the session fails loudly; no test is ever skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from storage import Storage, connect
from storage.embedded import EmbeddedRedis
from storage.embedded_cluster import EmbeddedCluster


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: EmbeddedRedis) -> str:
    return redis_server.url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(tmp_path_factory.mktemp("cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def key_prefix() -> str:
    """A fresh key prefix, so tests sharing the server never see each other's keys."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def storage(redis_url: str, key_prefix: str) -> AsyncIterator[Storage]:
    """Storage on the session's server under this test's own key prefix."""
    store = await connect(redis_url, prefix=key_prefix)
    yield store
    await store.close()
