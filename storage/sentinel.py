"""``redis+sentinel://`` URLs: reach the current primary through Redis Sentinel.

``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service[/db]`` names
the sentinels (port 26379 by default) and the monitored service; the credentials and db
are the primary's. Sentinels with a password of their own (``requirepass`` on the
sentinel) take it as ``?sentinel_password=`` (and an ACL user as ``sentinel_username=``),
as redis-py's ``sentinel_kwargs``, ioredis and go-redis keep the two apart. redis-py's
Sentinel client asks the sentinels for the primary and, after a failover, drops
connections to the demoted one and asks again.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .hosts import credential_free, parse_hosts

SCHEME = "redis+sentinel"
DEFAULT_PORT = 26379
_OPTIONS = ("sentinel_username", "sentinel_password")


@dataclass(frozen=True, kw_only=True)
class SentinelTarget:
    """What a ``redis+sentinel://`` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sentinel_username: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)


class SentinelAuthError(MasterNotFoundError):
    """No sentinel named the primary, and some refused our credentials (none or wrong)."""


def parse_sentinel_url(url: str) -> SentinelTarget:
    """The sentinels, service and primary credentials of ``url``; ValueError saying what is
    wrong when it is not a well-formed ``redis+sentinel://`` URL."""
    try:
        return _parse_sentinel_url(url)
    except ValueError as exc:
        raise credential_free(exc, url) from None


def _parse_sentinel_url(url: str) -> SentinelTarget:
    """``parse_sentinel_url``'s reading, its errors free to quote the URL."""
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
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - set(_OPTIONS))
    if unknown:  # names only: a mistyped sentinel_password's value must not be shown
        raise ValueError(f"unknown options {unknown}: only {' and '.join(_OPTIONS)}")
    sentinel_username, sentinel_password = (query.get(name, [""])[-1] or None for name in _OPTIONS)
    if sentinel_username is not None and sentinel_password is None:
        raise ValueError("sentinel_username needs sentinel_password too")
    return SentinelTarget(
        sentinels=found.hosts,
        service=urllib.parse.unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        username=found.username,
        password=found.password,
        sentinel_username=sentinel_username,
        sentinel_password=sentinel_password,
    )


class _Sentinel(Sentinel):
    """redis-py's Sentinel, saying when the sentinels refused our credentials: redis-py's
    own error folds every sentinel's failure into one long text."""

    async def discover_master(self, service_name: str) -> tuple[str, int]:
        """redis-py's walk: the first sentinel that names a healthy primary, moved to the
        front; SentinelAuthError when none does and any refused our credentials."""
        refused = 0
        for number, sentinel in enumerate(self.sentinels):
            try:
                masters = cast(dict[str, Any], await sentinel.sentinel_masters())
            except AuthenticationError:
                refused += 1
                continue
            except (RedisConnectionError, RedisTimeoutError):
                continue
            state = masters.get(service_name)
            if state and self.check_master_state(state, service_name):
                self.sentinels[0], self.sentinels[number] = sentinel, self.sentinels[0]
                return state["ip"], state["port"]
        if refused:
            raise SentinelAuthError(f"{refused} of {len(self.sentinels)} sentinels")
        raise MasterNotFoundError(f"No master found for {service_name!r}")


def sentinel_credentials(target: SentinelTarget) -> dict[str, Any]:
    """The sentinels' own credentials, as redis-py's ``sentinel_kwargs`` take them."""
    if target.sentinel_password is None:
        return {}
    return {"username": target.sentinel_username, "password": target.sentinel_password}


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The primary's connections; a burst of callers waits for one instead of failing."""


def sentinel_redis(
    target: SentinelTarget, *, max_connections: int, timeout: float, **connection: Any
) -> aioredis.Redis:
    """A client of ``target``'s current primary; ``connection``: the primary's connection
    options (retry, timeouts, decoding); the sentinels get its timeouts and, when the URL
    gives them, their own credentials."""
    sentinel_options: dict[str, Any] = {
        k: v for k, v in connection.items() if k in ("socket_timeout", "socket_connect_timeout")
    }
    # Each sentinel asked once per search: the primary's connection retries the search, and
    # redis-py's default retry of a client (seconds of backoff) would multiply the wait.
    sentinel_options["retry"] = Retry(NoBackoff(), 0)
    sentinel = _Sentinel(  # type: ignore[no-untyped-call]
        list(target.sentinels),
        sentinel_kwargs=sentinel_options | sentinel_credentials(target),
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
