"""A pending request whose record Redis lost (evicted, or deleted by hand): the one sweep
that meets it ends what waited on it, so nothing waits for ever on a request nobody can
decide any more."""

from __future__ import annotations

import logging

from agent_runtime.errors import AgentRuntimeError
from bot.runs.drive import settle
from bot.runs.place import place_of
from bot.services import Services
from bot.ui.home import refresh_homes
from bot.ui.redraws import update_message
from storage.errors import StorageError
from storage.outcomes import LostRecord
from storage.records import InterruptRecord
from storage.requests import is_request_run

log = logging.getLogger(__name__)


async def end_lost(services: Services, lost: LostRecord) -> None:
    """Cancel the run's other pending requests (their cards say why) and end
    an agent's run as cancelled in the thread its other cards name. With no other record
    of the run left, nothing says where its run is: the log says it cannot be ended."""
    reason = f"Request {lost.record_id} was lost from Redis and can no longer be decided."
    try:
        cancelled = await services.storage.interrupts.cancel_run(
            lost.run_id, reason=reason, now=services.clock.now()
        )
        others, _ = await services.storage.queries.many([*cancelled.ids, *cancelled.not_run])
    except StorageError as exc:
        log.error(
            "run %s: what waits on lost request %s not ended: %s", lost.run_id, lost.record_id, exc
        )
        return
    await _redraw(services, others)
    if is_request_run(lost.run_id):
        return
    if not others:
        log.error(
            "run %s waits on lost request %s and cannot be ended: no other record of it "
            "says which thread it runs in",
            lost.run_id,
            lost.record_id,
        )
        return
    await _end_agent_run(services, others[0], reason)


async def _redraw(services: Services, records: list[InterruptRecord]) -> None:
    """Redraw the cards of ``records`` as they now stand, each message once."""
    drawn: set[tuple[str | None, str | None]] = set()
    for record in records:
        if (record.channel, record.message_ts) not in drawn:
            drawn.add((record.channel, record.message_ts))
            await update_message(services, record)
            await refresh_homes(services, record)


async def _end_agent_run(services: Services, record: InterruptRecord, reason: str) -> None:
    """End the agent's run of ``record`` as cancelled and say so where it runs."""
    if services.registry.spec(record.agent) is None:
        log.error("run %s not ended: no agent %r in this process", record.run_id, record.agent)
        return
    try:
        ended = await services.registry.agent(record.agent).cancel(record.thread_id, reason)
    except AgentRuntimeError as exc:  # a resume saved first: storage refused it anyway
        log.warning("run %s not cancelled: %s", record.run_id, exc)
        return
    if ended is None:  # it waited on nothing any more
        log.info("run %s had nothing waiting to cancel", record.run_id)
        return
    await settle(services, record.agent, ended, place=place_of(record))
