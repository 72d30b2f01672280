"""The one Redis connection storage uses: retries with backoff, typed errors, Lua scripts.

Wraps ``redis.asyncio.Redis`` rather than subclassing it; every call site goes through
``guard`` so a Redis failure surfaces as a StorageError saying what to check.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, cast

import redis.asyncio as aioredis
from redis import exceptions as rexc
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript

from .cluster import ClusterTarget, cluster_redis, is_cluster_url, parse_cluster_url
from .errors import (
    StorageAuthError,
    StorageResponseError,
    StorageTimeoutError,
    StorageUnavailableError,
)
from .hosts import credential_free
from .sentinel import SCHEME, SentinelAuthError, parse_sentinel_url, sentinel_redis

log = logging.getLogger(__name__)

_LUA_PRELUDE = "common.lua"
CLUSTER_CONNECTIONS = 1024
"""Connections per cluster node: redis-py's cluster client fails a caller who finds the
pool full instead of making it wait, so the pool is sized for the largest burst."""


class RedisClient:
    """An async Redis connection with retry, error translation and our Lua scripts."""

    def __init__(
        self, url: str, *, retries: int = 4, timeout: float = 5.0, max_connections: int = 64
    ) -> None:
        self.url = url
        # A lost connection is tried again for about 1.2 s (a restart, a blip), less than a
        # click's ack budget; a timeout is not: the command may have run, and a stalled
        # server would hold the caller several times the timeout.
        retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), retries, (rexc.ConnectionError,))
        connection: dict[str, Any] = {
            "decode_responses": True,
            "retry": retry,
            "retry_on_error": [rexc.ConnectionError],
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "health_check_interval": 30,
        }
        self._sentinel = parse_sentinel_url(url) if url.startswith(f"{SCHEME}://") else None
        self.cluster: ClusterTarget | None = parse_cluster_url(url) if is_cluster_url(url) else None
        self.raw: aioredis.Redis
        self._cluster: RedisCluster | None = None
        if self.cluster is not None:
            self._cluster = cluster_redis(
                self.cluster, max_connections=CLUSTER_CONNECTIONS, **connection
            )
            # RedisCluster answers the same commands; typed as one client for the callers.
            self.raw = cast(aioredis.Redis, self._cluster)
        elif self._sentinel is not None:
            self.raw = sentinel_redis(
                self._sentinel, max_connections=max_connections, timeout=timeout, **connection
            )
        else:
            # A blocking pool makes a burst of callers wait for a connection, not fail.
            try:
                pool = aioredis.BlockingConnectionPool.from_url(
                    url, max_connections=max_connections, timeout=timeout, **connection
                )
            except ValueError as exc:
                raise credential_free(exc, url) from None
            self.raw = aioredis.Redis(connection_pool=pool)
        self._scripts: dict[str, AsyncScript] = {}

    @property
    def where(self) -> str:
        """The server address for messages, without credentials."""
        if self.cluster is not None:
            return "the cluster at " + ",".join(f"{h}:{p}" for h, p in self.cluster.nodes)
        if self._sentinel is not None:
            hosts = ",".join(f"{host}:{port}" for host, port in self._sentinel.sentinels)
            return f"the primary of {self._sentinel.service!r} (sentinels {hosts})"
        kwargs = self.raw.connection_pool.connection_kwargs
        if "path" in kwargs:
            return f"unix:{kwargs['path']}"
        # A URL without a port means redis-py's default, the one it tries.
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', 6379)}"

    @asynccontextmanager
    async def guard(self, action: str) -> AsyncIterator[None]:
        """Translate redis-py exceptions raised while doing ``action`` into StorageErrors."""
        try:
            yield
        except rexc.AuthenticationError as exc:
            raise StorageAuthError(
                f"{action}: Redis at {self.where} refused our credentials ({exc}); "
                "check the user and password in REDIS_URL"
            ) from exc
        except rexc.TimeoutError as exc:
            why = self._tls_hint(exc) or "it may be overloaded or stalled"
            raise StorageTimeoutError(
                f"{action}: Redis at {self.where} did not answer in time ({exc}); {why}"
            ) from exc
        except SentinelAuthError as exc:
            raise StorageAuthError(
                f"{action}: cannot find {self.where}: {exc} refused our credentials; "
                + self._sentinel_credentials_hint()
            ) from exc
        except MasterNotFoundError as exc:  # its text is a long repr of redis-py's client
            raise StorageUnavailableError(
                f"{action}: cannot find {self.where} after retrying: no sentinel named a "
                "reachable primary (they are unreachable, refuse our connection, or do not "
                "know the service); check REDIS_URL and the sentinels"
            ) from exc
        except (rexc.ConnectionError, OSError) as exc:
            if "DB index is out of range" in str(exc):  # over a unix socket
                raise self._no_such_database(action) from exc
            raise StorageUnavailableError(
                f"{action}: cannot reach Redis at {self.where} after retrying ({exc}); "
                "check REDIS_URL, that the server is running, and the network"
            ) from exc
        except (rexc.ClusterDownError, rexc.ClusterError) as exc:
            raise StorageUnavailableError(
                f"{action}: {self.where} cannot serve the request now, even after retrying "
                f"({exc}); check that every slot has a reachable primary"
            ) from exc
        except rexc.RedisClusterException as exc:  # no node reachable, or not a cluster
            why = self._tls_hint(exc) or (
                "check the nodes, the credentials, and that the server runs in cluster mode "
                "(a single server takes a redis:// URL)"
            )
            raise StorageUnavailableError(
                f"{action}: cannot use {self.where} as a Redis Cluster ({exc}); {why}"
            ) from exc
        except rexc.ResponseError as exc:
            if "DB index is out of range" in str(exc):  # over TCP
                raise self._no_such_database(action) from exc
            said = str(exc).rstrip(", ")  # Redis ends "with args beginning with: ..." so
            raise StorageResponseError(
                f"{action}: Redis at {self.where} answered an error: {said}{_hint(exc)}"
            ) from exc

    def _tls_hint(self, exc: Exception) -> str | None:
        """With TLS asked for, a connection that timed out is most often a server without
        TLS, waiting for a command while we wait for its handshake."""
        if not self.url.startswith("rediss") or "Timeout connecting" not in str(exc):
            return None
        plain = "redis+cluster://" if self.cluster is not None else "redis://"
        return f"check that it has TLS on, as {self.url.split('://')[0]}:// asks; else use {plain}"

    def _no_such_database(self, action: str) -> StorageUnavailableError:
        """The server answered SELECT: it is running, without the database REDIS_URL names."""
        return StorageUnavailableError(
            f"{action}: Redis at {self.where} has no such database (DB index is out of "
            "range); name one it has in REDIS_URL, such as /0"
        )

    def _sentinel_credentials_hint(self) -> str:
        """What to put right in REDIS_URL when the sentinels refused us."""
        if self._sentinel is None or self._sentinel.sentinel_password is None:
            return (
                "sentinels with a password of their own take it as ?sentinel_password= "
                "(percent-encoded) in REDIS_URL"
            )
        return "check sentinel_password (and sentinel_username) in REDIS_URL"

    def script(self, name: str) -> AsyncScript:
        """The Lua script ``storage/lua/<name>.lua`` (with the shared prelude), run by EVALSHA."""
        script = self._scripts.get(name)
        if script is None:
            lua = resources.files(__package__) / "lua"
            source = (lua / _LUA_PRELUDE).read_text() + "\n" + (lua / f"{name}.lua").read_text()
            script = self.raw.register_script(source)
            self._scripts[name] = script
        return script

    async def eval(self, name: str, keys: list[str], args: list[str | int]) -> object:
        """Run script ``name`` once; the result as Redis returned it."""
        async with self.guard(f"script {name}"):
            return await self.script(name)(keys=keys, args=args)

    async def eval_each(
        self,
        name: str,
        calls: Sequence[tuple[list[str], list[str | int]]],
        *,
        raise_on_error: bool = False,
    ) -> list[object]:
        """Run script ``name`` once per ``(keys, args)``, all in one pipeline; a call that
        failed answers with its exception (or, ``raise_on_error``, raises it), the others
        are unaffected."""
        lua = self.script(name)
        async with self.guard(f"script {name}"):
            replies = await self._eval_pipelined(lua, calls)
            # A server that lacks the script (restarted, or a primary new since a failover)
            # is sent it with the calls it refused (EVAL caches it there): only the nodes
            # that need it are asked, so one that stalls holds up its own calls alone.
            missing = [i for i, r in enumerate(replies) if isinstance(r, rexc.NoScriptError)]
            if missing:
                again = await self._eval_pipelined(lua, [calls[i] for i in missing], with_text=True)
                for i, reply in zip(missing, again, strict=True):
                    replies[i] = reply
            if raise_on_error:
                for reply in replies:
                    if isinstance(reply, Exception):
                        raise reply
            return replies

    async def _eval_pipelined(
        self,
        lua: AsyncScript,
        calls: Sequence[tuple[list[str], list[str | int]]],
        *,
        with_text: bool = False,
    ) -> list[object]:
        """The calls by EVALSHA (``with_text``: EVAL) in one pipeline. Not through
        ``AsyncScript``: on one server its pipeline asks ``SCRIPT EXISTS`` first (a round
        trip each time), and a cluster pipeline refuses it."""
        pipe = self.pipeline()
        command, script = ("EVAL", lua.script) if with_text else ("EVALSHA", lua.sha)
        for keys, args in calls:
            pipe.execute_command(command, script, len(keys), *keys, *args)
        return list(await pipe.execute(raise_on_error=False))

    async def on_node_of(self, key: str, *command: str | int) -> Any:
        """Run ``command``, which names ``key``, on the node holding ``key``. On a cluster
        redis-py would first ask a node which keys a stream read names (``COMMAND
        GETKEYS``, a round trip before every read); naming the node spares it."""
        if self._cluster is None:
            return await self.raw.execute_command(*command)  # type: ignore[no-untyped-call]
        node = self._cluster.get_node_from_key(key)
        return await self._cluster.execute_command(*command, target_nodes=node)

    async def first_to_mark(self, key: str, *, keep_ms: int, action: str) -> bool:
        """Whether this call is the first to set ``key`` (kept ``keep_ms``): one ``SET NX PX``,
        so racing callers agree on one. The mark is a token of this call, so a call redis-py
        sent again (its reply was lost) still finds itself first."""
        mine = secrets.token_hex(8)
        async with self.guard(action):
            if await self.raw.set(key, mine, nx=True, px=keep_ms):
                return True
            return bool(await self.raw.get(key) == mine)

    async def take_field(self, key: str, field: str, *, marker: str, action: str) -> str | None:
        """Remove ``field`` of hash ``key``; its value, or None when it had none. ``marker``
        (a key of this call, in ``key``'s slot) keeps the value a minute, so a call redis-py
        sent again (its reply was lost) still gets it."""
        async with self.guard(action):
            taken = await self.script("take_field")(keys=[key, marker], args=[field, 60_000])
        return str(taken) if taken else None

    def pipeline(self) -> Pipeline:
        """A non-transactional pipeline: many commands, one round trip."""
        return self.raw.pipeline(transaction=False)

    async def ping(self) -> None:
        async with self.guard("ping"):
            await self.raw.ping()

    async def close(self) -> None:
        if self.cluster is not None:
            await self.raw.aclose()
        else:
            await self.raw.aclose(close_connection_pool=True)


def _hint(error: rexc.ResponseError) -> str:
    """What an error Redis answered usually means here, when it is a known one."""
    if isinstance(error, rexc.AskError):  # MOVED too
        return "; the server is a Redis Cluster node: use a redis+cluster:// URL"
    if isinstance(error, rexc.ReadOnlyError):
        return "; the server is a replica: name the primary, or use a redis+sentinel:// URL"
    if "unknown command `HELLO`" in str(error):  # redis-py's first command, from 6.0 on
        return (
            "; the server is older than 6.0: Signoff needs Redis or Valkey 6.2 or newer; "
            "upgrade it or point REDIS_URL at another"
        )
    if str(error).startswith("WRONGTYPE"):
        return "; another application writes under our key prefix: choose another prefix"
    return ""
