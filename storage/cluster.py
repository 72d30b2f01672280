"""``redis+cluster://`` URLs: Redis Cluster, or a managed service in cluster mode.

``redis+cluster://[[user]:password@]host[:port][,host[:port]...][/]`` names startup
nodes (any of the cluster's nodes, port 6379 by default); ``rediss+cluster://`` is the
same over TLS, checked against the system's CAs or ``?ssl_ca_certs=/path/ca.pem``.
redis-py's RedisCluster asks the nodes for the slot map and follows MOVED and ASK
redirects, so a slot migration or a failover needs nothing of ours.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from dataclasses import dataclass
from typing import Any

from redis.asyncio.cluster import ClusterNode, ClusterPipeline, PipelineStrategy, RedisCluster
from redis.exceptions import ClusterDownError, SlotNotCoveredError
from redis.exceptions import ConnectionError as RedisConnectionError

from .hosts import credential_free, parse_hosts

SCHEMES = ("redis+cluster", "rediss+cluster")
DEFAULT_PORT = 6379


@dataclass(frozen=True, kw_only=True)
class ClusterTarget:
    """What a ``redis+cluster://`` URL names."""

    nodes: tuple[tuple[str, int], ...]
    tls: bool = False
    ca_certs: str | None = None
    username: str | None = None
    password: str | None = None


def is_cluster_url(url: str) -> bool:
    return url.split("://", 1)[0] in SCHEMES


def parse_cluster_url(url: str) -> ClusterTarget:
    """The startup nodes and credentials of ``url``; ValueError saying what is wrong when
    it is not a well-formed ``redis+cluster://`` URL."""
    try:
        return _parse_cluster_url(url)
    except ValueError as exc:
        raise credential_free(exc, url) from None


def _parse_cluster_url(url: str) -> ClusterTarget:
    """``parse_cluster_url``'s reading, its errors free to quote the URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError("not a redis+cluster:// or rediss+cluster:// URL")
    if parts.path.strip("/"):
        raise ValueError("a cluster has one database: end the URL after the nodes")
    query = urllib.parse.parse_qs(parts.query)
    if set(query) - {"ssl_ca_certs"}:
        raise ValueError(
            f"unknown options {sorted(set(query) - {'ssl_ca_certs'})}: only ssl_ca_certs"
        )
    ca_certs = query.get("ssl_ca_certs", [None])[-1]
    if ca_certs is not None and parts.scheme != "rediss+cluster":
        raise ValueError("ssl_ca_certs needs TLS: use rediss+cluster://")
    found = parse_hosts(
        parts.netloc,
        default_port=DEFAULT_PORT,
        what="cluster node",
        example="redis+cluster://host1:6379,host2:6379/",
    )
    return ClusterTarget(
        nodes=found.hosts,
        tls=parts.scheme == "rediss+cluster",
        ca_certs=ca_certs,
        username=found.username,
        password=found.password,
    )


class _Cluster(RedisCluster):
    """redis-py's RedisCluster, which does not send a command that timed out again: it may
    have run, and a stalled node would hold its caller for five timeouts. A lost connection
    or a cluster mid-failover is still tried again, on the slot map read anew. Its
    pipelines do the same (redis-py's own retry every error of its base class's list)."""

    ERRORS_ALLOW_RETRY = (  # type: ignore[assignment]  # typed as redis-py's own tuple
        RedisConnectionError,
        ClusterDownError,
        SlotNotCoveredError,
    )

    def pipeline(
        self, transaction: Any | None = None, shard_hint: Any | None = None
    ) -> ClusterPipeline:
        """redis-py's cluster pipeline, its non-transactional run ``_PipelineStrategy``."""
        pipe = super().pipeline(transaction, shard_hint)
        if not transaction:
            pipe._execution_strategy = _PipelineStrategy(pipe)
        return pipe


class _PipelineStrategy(PipelineStrategy):
    """redis-py's pipeline run, tried again only on ``_Cluster.ERRORS_ALLOW_RETRY``."""

    async def execute(
        self, raise_on_error: bool = True, allow_redirections: bool = True
    ) -> list[Any]:
        if not self._command_queue:
            return []
        client = self._pipe.cluster_client
        retries = client.retry.get_retries()
        while True:
            try:
                if client._initialize:
                    await client.initialize()
                return await self._execute(
                    client,
                    self._command_queue,
                    raise_on_error=raise_on_error,
                    allow_redirections=allow_redirections,
                )
            except _Cluster.ERRORS_ALLOW_RETRY:
                if retries <= 0:
                    raise
                retries -= 1  # the slot map is read again, as redis-py's own run does
                await client.aclose()
                await asyncio.sleep(0.25)


def cluster_redis(
    target: ClusterTarget, *, max_connections: int, **connection: Any
) -> RedisCluster:
    """A client of the cluster ``target`` names; ``connection``: each node's connection
    options (retry, timeouts, decoding). ``max_connections`` is per node."""
    return _Cluster(
        startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
        username=target.username,
        password=target.password,
        ssl=target.tls,
        ssl_ca_certs=target.ca_certs,
        max_connections=max_connections,
        **connection,
    )
