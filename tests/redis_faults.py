"""Redis faults a test can stage in redis-py itself, where a real server cannot be made to
show them on cue."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from redis import exceptions as rexc
from redis.asyncio.client import Pipeline, Redis

_sending: ContextVar[tuple[Any, ...]] = ContextVar("sending", default=())


@contextlib.contextmanager
def reply_lost_once(naming: str = "", command: str = "EVALSHA") -> Iterator[list[str]]:
    """The next script (or other ``command``) whose arguments mention ``naming``, alone or
    in a pipeline, runs on the server, then its connection drops before the reply is read:
    redis-py sends it (the whole pipeline) again on a new one. A script is run by EVALSHA,
    or by EVAL where the server lacked it: the lost reply is recorded as EVALSHA's."""
    execute, parse = Redis.execute_command, Redis.parse_response
    pipelined = Pipeline._execute_pipeline
    lost: list[str] = []

    async def executing(self: Redis, *args: Any, **options: Any) -> Any:
        token = _sending.set(args)
        try:
            return await execute(self, *args, **options)
        finally:
            _sending.reset(token)

    async def executing_pipeline(self: Pipeline, connection: Any, commands: Any, *rest: Any) -> Any:
        token = _sending.set(tuple(a for args, _ in commands for a in args))
        try:
            return await pipelined(self, connection, commands, *rest)
        finally:
            _sending.reset(token)

    async def parsing(self: Redis, connection: Any, command_name: str, **options: Any) -> Any:
        reply = await parse(self, connection, command_name, **options)
        sent = " ".join(str(a) for a in _sending.get())
        run = "EVALSHA" if command_name == "EVAL" else command_name
        if run == command and naming in sent and not lost:
            lost.append(run)
            raise rexc.ConnectionError("Connection closed by server.")
        return reply

    Redis.execute_command, Redis.parse_response = executing, parsing  # type: ignore[method-assign]
    Pipeline._execute_pipeline = executing_pipeline  # type: ignore[method-assign]
    try:
        yield lost
    finally:
        Redis.execute_command, Redis.parse_response = execute, parse  # type: ignore[method-assign]
        Pipeline._execute_pipeline = pipelined  # type: ignore[method-assign]
