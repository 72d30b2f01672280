"""Fixtures of the process tests: a sandbox per test, and Redis twice over: an embedded
server of the test's own, then the session's Redis Cluster under a key prefix of the
test's own (``SIGNOFF_REDIS_PREFIX``, which the processes inherit)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from sandbox import Sandbox
from storage import EmbeddedRedis


@pytest.fixture(params=["single", "cluster"])
def redis_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[str]:
    if request.param == "cluster":
        monkeypatch.setenv("SIGNOFF_REDIS_PREFIX", key_prefix)
        yield str(request.getfixturevalue("redis_cluster").url)
        return
    server = EmbeddedRedis(tmp_path / "redis")
    yield server.start()
    server.stop()


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with Sandbox() as running:
        yield running
