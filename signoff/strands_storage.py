"""Strands' ``Storage`` protocol on Redis, so a Strands agent's own sessions
(``SnapshotSessionManager``) live on the Redis Signoff already runs, readable by any worker.

    from strands.session import SnapshotSessionManager
    from signoff.strands_storage import RedisStorage
    Agent(..., session_manager=SnapshotSessionManager("ticket-42", storage=RedisStorage(url)))

Strands calls its storage both from the agent's event loop and, from synchronous hooks,
from a fresh event loop in a worker thread; an asyncio Redis client is bound to the loop
that made it, so this storage runs redis-py's thread-safe synchronous client in a thread.
Each value is a Redis string; a sorted set indexes the keys, so ``list`` answers a prefix
in key order without scanning the keyspace. Writing a value and indexing it are one
MULTI/EXEC transaction.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis import exceptions as rexc
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel
from strands.storage.storage import Storage
from strands.types.exceptions import StorageError

from storage.cluster import is_cluster_url, parse_cluster_url
from storage.hosts import credential_free
from storage.sentinel import SCHEME as SENTINEL_SCHEME
from storage.sentinel import SentinelTarget, parse_sentinel_url, sentinel_credentials

T = TypeVar("T")
_LAST = b"\xff"
"""A byte no UTF-8 key holds, so it sorts after every key's next byte: ``[prefix`` to
``[prefix\\xff``, compared as bytes as Redis does, spans a prefix."""


class RedisStorage(Storage):
    """Byte blobs under string keys in Redis (``<prefix>:blob:<key>``), indexed by a sorted
    set (``<prefix>:keys``); on Redis Cluster the prefix is a hash tag, ``{<prefix>}``.
    Search is Strands' default keyword scan over these keys."""

    def __init__(
        self,
        url: str | redis.Redis | RedisCluster,
        *,
        prefix: str = "signoff:strands",
        retries: int = 5,
    ) -> None:
        if isinstance(url, str):
            url = _client(url, retries)
        self._redis = url
        if isinstance(url, RedisCluster):
            prefix = f"{{{prefix}}}"  # one hash slot: a write and its index entry stay one step
        self._index = f"{prefix}:keys"
        self._blob = f"{prefix}:blob:"

    async def write(self, key: str, data: bytes) -> None:
        def write() -> None:
            with self._redis.pipeline(transaction=True) as tx:
                tx.set(self._blob + key, data)
                tx.zadd(self._index, {key: 0})
                tx.execute()

        await self._call(f"write {key!r}", write)

    async def read(self, key: str) -> bytes | None:
        data = await self._call(f"read {key!r}", lambda: self._redis.get(self._blob + key))
        return bytes(data) if data is not None else None  # type: ignore[arg-type]

    async def delete(self, key: str) -> None:
        def delete() -> None:
            with self._redis.pipeline(transaction=True) as tx:
                tx.delete(self._blob + key)
                tx.zrem(self._index, key)
                tx.execute()

        await self._call(f"delete {key!r}", delete)

    async def list(self, query: str) -> builtins.list[str]:
        prefix = b"[" + query.encode()
        low, high = (b"-", b"+") if not query else (prefix, prefix + _LAST)
        keys = await self._call(
            f"list {query!r}", lambda: self._redis.zrangebylex(self._index, low, high)
        )
        return [k.decode() if isinstance(k, bytes) else str(k) for k in keys]

    def close(self) -> None:
        """Close the connections; the storage cannot be used afterwards."""
        self._redis.close()

    async def _call(self, action: str, call: Callable[[], T]) -> T:
        """Run a blocking Redis call in a thread, its failure a Strands ``StorageError``."""
        try:
            return await asyncio.to_thread(call)
        except MasterNotFoundError as exc:  # its text is a long repr of redis-py's client
            raise StorageError(
                f"Redis storage could not {action}: no sentinel named a reachable primary "
                "(they are unreachable, refuse the credentials, or do not know the service)"
            ) from exc
        except rexc.RedisError as exc:
            raise StorageError(f"Redis storage could not {action}: {exc}") from exc


def _client(url: str, retries: int) -> redis.Redis | RedisCluster:
    """A client of ``url``: one server, its current primary through Sentinel
    (``redis+sentinel://``), or a cluster (``redis+cluster://``), as Signoff takes them."""
    options: dict[str, Any] = {
        "retry": Retry(ExponentialBackoff(cap=2.0, base=0.05), retries),
        "retry_on_error": [rexc.ConnectionError, rexc.TimeoutError],
        "socket_timeout": 5.0,
        "socket_connect_timeout": 5.0,
    }
    if url.startswith(f"{SENTINEL_SCHEME}://"):
        return _primary(parse_sentinel_url(url), options)
    if not is_cluster_url(url):
        try:
            return redis.Redis.from_url(url, **options)
        except ValueError as exc:
            raise credential_free(exc, url) from None
    target = parse_cluster_url(url)
    nodes = [ClusterNode(host, port) for host, port in target.nodes]  # type: ignore[no-untyped-call]
    return RedisCluster(
        startup_nodes=nodes,
        username=target.username,
        password=target.password,
        ssl=target.tls,
        ssl_ca_certs=target.ca_certs,
        **options,
    )


def _primary(target: SentinelTarget, options: dict[str, Any]) -> redis.Redis:
    """A client of the primary the sentinels of ``target`` name, found again after a
    failover; each sentinel is asked once per search, the primary's retry repeats it."""
    watchers = {
        "socket_timeout": options["socket_timeout"],
        "socket_connect_timeout": options["socket_connect_timeout"],
        "retry": Retry(NoBackoff(), 0),
        **sentinel_credentials(target),
    }
    sentinel = Sentinel(  # type: ignore[no-untyped-call]
        list(target.sentinels),
        sentinel_kwargs=watchers,
        username=target.username,
        password=target.password,
        db=target.db,
        **options,
    )
    primary: redis.Redis = sentinel.master_for(target.service)  # type: ignore[no-untyped-call]
    return primary
