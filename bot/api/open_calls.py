"""How many calls each API client holds open in this process (long-polls, AG-UI streams,
runs API starts), capped: a leaked or looping token cannot hold every connection, and
the memory each holds. Over the cap a call is refused with a 429 before any work."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from aiohttp import web

from bot.services.limits import OPEN_CALLS_SETTING

from .schemas import ApiError

RETRY_AFTER = 5
"""The seconds a refused caller is told to wait (``Retry-After``): a slot frees as soon
as one of its calls ends, which nothing here can foresee."""


class OpenCalls:
    """The calls each client holds open, up to ``cap`` each (one for the process, kept on
    its application under ``OPEN_CALLS``)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._held: Counter[str] = Counter()

    def held(self, client: str) -> int:
        """How many calls ``client`` holds open now."""
        return self._held[client]

    def take(self, client: str) -> contextlib.AbstractContextManager[None] | None:
        """One of ``client``'s slots, freed when the block it guards ends in any way;
        None when it holds ``cap`` already."""
        if self._held[client] >= self.cap:
            return None
        return self._slot(client)

    @contextlib.contextmanager
    def _slot(self, client: str) -> Iterator[None]:
        """Held from entering the block, so a slot taken but never entered holds nothing."""
        self._held[client] += 1
        try:
            yield
        finally:
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]

    def refusal(self, client: str) -> web.Response:
        """The 429 of a call over ``client``'s cap, naming the cap and its setting."""
        message = (
            f"client {client!r} holds {self.cap} calls open already (long-polls, AG-UI "
            f"streams, runs), the most {OPEN_CALLS_SETTING} allows; ask again when one ends"
        )
        body = ApiError(error=message, limit=self.cap, setting=OPEN_CALLS_SETTING)
        return web.json_response(
            body.model_dump(exclude_none=True),
            status=429,
            headers={"Retry-After": str(RETRY_AFTER)},
        )


OPEN_CALLS = web.AppKey("open_calls", OpenCalls)
"""Where the application keeps its ``OpenCalls``."""
