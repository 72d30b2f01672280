"""A pending request whose record Redis lost (evicted, or deleted by hand): the one sweep
that meets it ends what waited on it, so nothing waits for ever on a request nobody can
decide any more."""

from __future__ import annotations

import json
import logging

from agent_runtime.errors import AgentRuntimeError
from bot.errors import AgentBuildError
from bot.runs.drive import settle
from bot.runs.place import Place, place_of
from bot.services import Services
from bot.services.log_context import log_ids
from bot.ui.home import refresh_homes
from bot.ui.redraws import update_message
from bot.ui.slack_failures import SLACK_FAILURES, why_failed
from storage.errors import StorageError
from storage.outcomes import LostRecord
from storage.records import InterruptRecord
from storage.requests import is_request_run

log = logging.getLogger(__name__)


async def end_if_lost(services: Services, record_id: str) -> bool:
    """End the pending record ``record_id`` that a read found gone, as the expiry sweep
    ends one, when this caller claims it first; whether it did (only one caller does)."""
    claimed = await services.storage.interrupts.claim_gone(record_id, services.clock.now())
    if claimed is None:
        return False
    with log_ids(record_id=record_id, run_id=claimed.run_id):
        await end_lost(services, claimed)
    return True


async def end_lost(services: Services, lost: LostRecord) -> None:
    """Say on the lost request's card (when it is known) that it can no longer be decided,
    cancel the run's other pending requests (their cards say why) and end an agent's run as
    cancelled in its thread. A run nothing says the thread of is left, and the log says so."""
    reason = f"Request {lost.record_id} was lost from Redis and can no longer be decided."
    try:
        cancelled = await services.storage.interrupts.cancel_run(
            lost.run_id, reason=reason, now=services.clock.now(), lost=lost.record_id
        )
        others, _ = await services.storage.queries.many([*cancelled.ids, *cancelled.not_run])
    except StorageError as exc:
        log.error(
            "run %s: what waits on lost request %s not ended: %s", lost.run_id, lost.record_id, exc
        )
        await _mark_card(services, lost, reason, [])
        return
    await _mark_card(services, lost, reason, others)
    await _redraw(services, others)
    if is_request_run(lost.run_id):
        return
    if others:
        run = others[0]
        await _end_agent_run(services, run.agent, run.thread_id, place_of(run), reason)
    elif lost.place.get("agent") and lost.place.get("thread_id"):
        place = lost.place
        where = Place(
            channel=place.get("channel") or None,
            thread_ts=place.get("thread_ts") or None,
            requested_by=place.get("requested_by", ""),
            asked_in=place.get("asked_in") or None,
        )
        await _end_agent_run(services, place["agent"], place["thread_id"], where, reason)
    else:
        log.error(
            "run %s waits on lost request %s and cannot be ended: nothing left in Redis "
            "says which thread it runs in",
            lost.run_id,
            lost.record_id,
        )


async def _mark_card(
    services: Services, lost: LostRecord, reason: str, others: list[InterruptRecord]
) -> None:
    """Replace the lost request's cards (its escalation cards too), where their place is
    known, by why it is gone: their buttons could decide nothing. A batch card it is an
    item of is left to be redrawn from its lead among ``others``: it says which item was
    lost, and what became of the rest."""
    card = lost.place.get(f"card:{lost.record_id}", "")
    kept = f"batch:{lost.record_id}" in lost.place  # it led one: drawn from the items kept
    if any(
        r.batch is not None
        and (r.batch != lost.record_id or kept)
        and f"{r.channel} {r.message_ts}" == card
        for r in others
    ):
        return
    try:
        escalations = json.loads(lost.place.get(f"escalation:{lost.record_id}") or "[]")
    except ValueError:
        log.warning("escalation cards of lost request %s not readable", lost.record_id)
        escalations = []
    text = f":warning: {reason} What it asked was not done."
    block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    for copy in [card, *escalations]:
        if not isinstance(copy, str) or " " not in copy:
            continue
        channel, ts = copy.split(" ", 1)
        try:
            await services.client.chat_update(channel=channel, ts=ts, text=text, blocks=[block])
        except SLACK_FAILURES as exc:
            log.warning(
                "card of lost request %s in %s not updated: %s",
                lost.record_id,
                channel,
                why_failed(exc),
            )


async def _redraw(services: Services, records: list[InterruptRecord]) -> None:
    """Redraw the cards of ``records`` as they now stand, each message once."""
    drawn: set[tuple[str | None, str | None]] = set()
    for record in records:
        if (record.channel, record.message_ts) not in drawn:
            drawn.add((record.channel, record.message_ts))
            await update_message(services, record)
            await refresh_homes(services, record)


async def _end_agent_run(
    services: Services, agent: str, thread_id: str, place: Place, reason: str
) -> None:
    """End ``agent``'s run on ``thread_id`` as cancelled and say so at ``place``."""
    if services.registry.spec(agent) is None:
        log.error("thread %s not ended: no agent %r in this process", thread_id, agent)
        return
    try:
        ended = await services.registry.agent(agent).cancel(thread_id, reason)
    except AgentBuildError as exc:  # its own code fails in this process (a missing key)
        log.error("thread %s waits on a lost request and was not ended: %s", thread_id, exc)
        return
    except AgentRuntimeError as exc:  # a resume saved first: storage refused it anyway
        log.warning("thread %s not cancelled: %s", thread_id, exc)
        return
    except StorageError as exc:
        log.error("thread %s waits on a lost request and was not ended: %s", thread_id, exc)
        return
    if ended is None:  # it waited on nothing any more
        log.info("thread %s had nothing waiting to cancel", thread_id)
        return
    await settle(services, agent, ended, place=place)
