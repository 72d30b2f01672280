"""Pending requests whose record Redis lost, found soon after it happened: a job that
waits only on its webhook hears of the loss within minutes, not once its time is up."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.services import Services

from .lost import end_if_lost

LOST_CHECK_EVERY = timedelta(minutes=2)
"""How often each scheduler looks for pending records Redis lost. A constant, as the
scheduler's other periods are: minutes keep a webhook-only job from waiting hours on a
request nobody can decide, while reading every pending id that often costs Redis little."""
LOST_CHECK_PAGE = 500
"""About how many pending ids of each shard one page of a check reads."""
LOST_CHECK_PAGES = 20
"""At most this many pages a pass reads; the next pass goes on from where it stopped, so a
pass stays short however many requests are pending."""


class LostCheck:
    """Every ``LOST_CHECK_EVERY``, reads the due indexes on from where the last pass stopped
    and ends each pending record found gone, as the expiry sweep ends one (once, whichever
    scheduler claims it first)."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._cursors: dict[int, int] = {}
        self._checked: datetime | None = None

    async def check(self) -> int:
        """One pass, when one is due: how many lost records this scheduler ended."""
        services = self._services
        now = services.clock.now()
        if self._checked is not None and now - self._checked < LOST_CHECK_EVERY:
            return 0
        self._checked = now
        ended = 0
        for _ in range(LOST_CHECK_PAGES):
            cursors = self._cursors or dict.fromkeys(services.storage.keys.all_shards, 0)
            page = await services.storage.interrupts.scan_gone(cursors, count=LOST_CHECK_PAGE)
            self._cursors = dict(page.cursors)
            for record_id in page.gone:
                ended += await end_if_lost(services, record_id)
            if not self._cursors:  # every shard read through: the next pass starts over
                break
        return ended
