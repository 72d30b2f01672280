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
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry
from strands.storage.storage import Storage
from strands.types.exceptions import StorageError

from storage.cluster import is_cluster_url, parse_cluster_url

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
        except rexc.RedisError as exc:
            raise StorageError(f"Redis storage could not {action}: {exc}") from exc


def _client(url: str, retries: int) -> redis.Redis | RedisCluster:
    """A client of ``url``: one server, or (``redis+cluster://``, as Signoff takes) a cluster."""
    options: dict[str, Any] = {
        "retry": Retry(ExponentialBackoff(cap=2.0, base=0.05), retries),
        "retry_on_error": [rexc.ConnectionError, rexc.TimeoutError],
        "socket_timeout": 5.0,
        "socket_connect_timeout": 5.0,
    }
    if not is_cluster_url(url):
        return redis.Redis.from_url(url, **options)
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
