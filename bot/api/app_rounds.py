"""A round the app closed on its cards is the app's to run: held while its run goes on,
let go when the run ends, handed to the resume worker when the run fails; if the app's
process dies, the hold lapses and the scheduler hands the round over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType

from bot.services import Services
from storage.decisions import APP_HOLD
from storage.errors import StorageError

log = logging.getLogger(__name__)

HANDED_OVER = (
    "the answers stay recorded on their cards, and Signoff's resume worker runs the "
    "thread on with them (retrying); its progress is posted with the cards"
)
"""What a failed app run adds to its RUN_ERROR once its round is handed over."""


class AppRound:
    """The hold on the round ``record_id`` closed (None: the app holds no round), renewed
    while the block runs."""

    def __init__(self, services: Services, record_id: str | None) -> None:
        self._services, self._record_id = services, record_id
        self._renewing: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AppRound:
        if self._record_id is not None:
            self._renewing = asyncio.create_task(self._renew(self._record_id))
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing

    async def done(self) -> None:
        """The app's run got through: no resume job is due for the round."""
        if self._record_id is None:
            return
        try:
            if not await self._services.storage.interrupts.app_round_done(self._record_id):
                log.warning(
                    "round of %s was handed over before the app's run ended", self._record_id
                )
        except StorageError as exc:  # the hold lapses; the worker finds the round applied
            log.error("round of %s not let go: %s", self._record_id, exc)

    async def hand_over(self) -> bool:
        """The app's run failed: the resume worker runs the round on. False when it was
        not handed over now (no round held, or Redis did not answer: the hold lapses)."""
        if self._record_id is None:
            return False
        interrupts = self._services.storage.interrupts
        try:
            job = await interrupts.hand_over(self._record_id, now=self._services.clock.now())
        except StorageError as exc:
            log.error("round of %s not handed over now: %s", self._record_id, exc)
            return False
        return bool(job)

    async def _renew(self, record_id: str) -> None:
        while True:
            await asyncio.sleep(APP_HOLD.total_seconds() / 4)
            try:
                now = self._services.clock.now()
                await self._services.storage.interrupts.renew_app_round(record_id, now=now)
            except StorageError as exc:
                log.warning("hold on the round of %s not renewed: %s", record_id, exc)
