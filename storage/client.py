"""The one Redis connection storage uses: retries with backoff, typed errors, Lua scripts.

Wraps ``redis.asyncio.Redis`` rather than subclassing it; every call site goes through
``guard`` so a Redis failure surfaces as a StorageError saying what to check.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from redis import exceptions as rexc
from redis.asyncio.client import Pipeline
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript
from redis.retry import Retry

from .errors import (
    StorageAuthError,
    StorageResponseError,
    StorageTimeoutError,
    StorageUnavailableError,
)
from .sentinel import SCHEME, parse_sentinel_url, sentinel_redis

log = logging.getLogger(__name__)

_LUA_PRELUDE = "common.lua"


class RedisClient:
    """An async Redis connection with retry, error translation and our Lua scripts."""

    def __init__(
        self, url: str, *, retries: int = 5, timeout: float = 5.0, max_connections: int = 64
    ) -> None:
        self.url = url
        connection: dict[str, Any] = {
            "decode_responses": True,
            "retry": Retry(ExponentialBackoff(cap=2.0, base=0.05), retries),
            "retry_on_error": [rexc.ConnectionError, rexc.TimeoutError],
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "health_check_interval": 30,
        }
        self._sentinel = parse_sentinel_url(url) if url.startswith(f"{SCHEME}://") else None
        if self._sentinel is not None:
            self.raw: aioredis.Redis = sentinel_redis(
                self._sentinel, max_connections=max_connections, timeout=timeout, **connection
            )
        else:
            # A blocking pool makes a burst of callers wait for a connection, not fail.
            pool = aioredis.BlockingConnectionPool.from_url(
                url, max_connections=max_connections, timeout=timeout, **connection
            )
            self.raw = aioredis.Redis(connection_pool=pool)
        self._scripts: dict[str, AsyncScript] = {}

    @property
    def where(self) -> str:
        """The server address for messages, without credentials."""
        if self._sentinel is not None:
            hosts = ",".join(f"{host}:{port}" for host, port in self._sentinel.sentinels)
            return f"the primary of {self._sentinel.service!r} (sentinels {hosts})"
        kwargs = self.raw.connection_pool.connection_kwargs
        if "path" in kwargs:
            return f"unix:{kwargs['path']}"
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"

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
            raise StorageTimeoutError(
                f"{action}: Redis at {self.where} did not answer in time, even after retrying "
                f"({exc}); it may be overloaded or stalled"
            ) from exc
        except (rexc.ConnectionError, OSError) as exc:
            raise StorageUnavailableError(
                f"{action}: cannot reach Redis at {self.where} after retrying ({exc}); "
                "check REDIS_URL, that the server is running, and the network"
            ) from exc
        except rexc.ResponseError as exc:
            raise StorageResponseError(
                f"{action}: Redis at {self.where} answered an error: {exc}. A WRONGTYPE error "
                "means another application writes under our key prefix; choose another prefix"
            ) from exc

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
        self, name: str, calls: Sequence[tuple[list[str], list[str | int]]]
    ) -> list[object]:
        """Run script ``name`` once per ``(keys, args)``, all in one pipeline; a call that
        failed answers with its exception, the others are unaffected."""
        lua = self.script(name)
        async with self.guard(f"script {name}"):
            pipe = self.pipeline()
            for keys, args in calls:
                await lua(keys=keys, args=args, client=pipe)
            return list(await pipe.execute(raise_on_error=False))

    def pipeline(self) -> Pipeline:
        """A non-transactional pipeline: many commands, one round trip."""
        return self.raw.pipeline(transaction=False)

    async def ping(self) -> None:
        async with self.guard("ping"):
            await self.raw.ping()

    async def close(self) -> None:
        await self.raw.aclose(close_connection_pool=True)
