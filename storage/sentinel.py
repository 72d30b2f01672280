"""``redis+sentinel://`` URLs: reach the current primary through Redis Sentinel.

``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service[/db]`` names
the sentinels (port 26379 by default) and the monitored service; the credentials and db
are the primary's. redis-py's Sentinel client asks the sentinels for the primary and, after
a failover, drops connections to the demoted one and asks again.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool

from .hosts import parse_hosts

SCHEME = "redis+sentinel"
DEFAULT_PORT = 26379


@dataclass(frozen=True, kw_only=True)
class SentinelTarget:
    """What a ``redis+sentinel://`` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None


def parse_sentinel_url(url: str) -> SentinelTarget:
    """The sentinels, service and primary credentials of ``url``; ValueError saying what is
    wrong when it is not a well-formed ``redis+sentinel://`` URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != SCHEME:
        raise ValueError(f"not a {SCHEME}:// URL")
    found = parse_hosts(
        parts.netloc,
        default_port=DEFAULT_PORT,
        what="sentinel",
        example="redis+sentinel://host:26379/mymaster",
    )
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise ValueError("name the service: redis+sentinel://host:26379/mymaster[/db]")
    if len(path) == 2 and not path[1].isdigit():
        raise ValueError(f"the db must be a number, not {path[1]!r}")
    return SentinelTarget(
        sentinels=found.hosts,
        service=urllib.parse.unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        username=found.username,
        password=found.password,
    )


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The primary's connections; a burst of callers waits for one instead of failing."""


def sentinel_redis(
    target: SentinelTarget, *, max_connections: int, timeout: float, **connection: Any
) -> aioredis.Redis:
    """A client of ``target``'s current primary; ``connection``: the primary's connection
    options (retry, timeouts, decoding), also used to talk to the sentinels."""
    sentinel_options = {
        k: v for k, v in connection.items() if k in ("socket_timeout", "socket_connect_timeout")
    }
    sentinel = Sentinel(  # type: ignore[no-untyped-call]
        list(target.sentinels),
        sentinel_kwargs=sentinel_options,
        username=target.username,
        password=target.password,
        db=target.db,
        **connection,
    )
    primary: aioredis.Redis = sentinel.master_for(
        target.service,
        connection_pool_class=_BlockingSentinelPool,
        max_connections=max_connections,
        timeout=timeout,
    )
    return primary
