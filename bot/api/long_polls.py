"""``GET /api/requests/{id}?wait=SECONDS``: the request as it stands the moment it is
decided, or when the wait is over, woken by ``RequestWatch``. Each long-poll holds one of
its client's open-call slots (``OpenCalls``) until it ends, however it ends."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable

from aiohttp import web

from storage.queries import InterruptQueries
from storage.records import InterruptRecord

from .bodies import error
from .schemas import RequestView
from .watch import RequestWatch

MAX_WAIT = 300
"""The longest a long-poll waits, in seconds; a client asks again to wait longer."""
ALIVE_EVERY = 1.0
"""How often a waiting long-poll checks its client is still connected, in seconds: the
server does not cancel a handler whose client went away, so without it a dropped poll
would hold its slot until its wait is over."""


def wait_seconds(request: web.Request) -> float | web.Response | None:
    """The ``wait`` the request asks for; None without one, a 400 when it is not a number
    of seconds from 0 to ``MAX_WAIT``."""
    given = request.query.get("wait")
    if given is None:
        return None
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_WAIT:
        return error(400, f"wait: seconds from 0 to {MAX_WAIT}", "wait")
    return seconds


async def long_poll(
    request: web.Request,
    record: InterruptRecord,
    *,
    seconds: float,
    watch: RequestWatch,
    queries: InterruptQueries,
    view: Callable[[InterruptRecord], Awaitable[RequestView]],
    gone: Callable[[str], Awaitable[web.Response]],
) -> web.StreamResponse:
    """``record``'s request as ``view`` shows it once it is no longer pending, the wait is
    over, the process stops or the client has gone; ``gone(run_id)`` when Redis lost it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    with watch.watching(record.run_id) as changed:
        while True:
            changed.clear()  # before the read: a change during it wakes the wait below
            latest = await queries.get(record.id)
            if latest is None:  # lost from Redis while waited on: as a new GET answers
                return await gone(record.run_id)
            record = latest
            shown = await view(record)  # with items: decided once all are
            left = deadline - loop.time()
            if shown.status != "pending" or left <= 0 or watch.closing:
                return web.json_response(json.loads(shown.model_dump_json()))
            while left > 0 and not changed.is_set():
                if request.transport is None:  # the client went away: nobody to answer
                    return web.Response(status=499)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), min(left, ALIVE_EVERY))
                left = deadline - loop.time()
