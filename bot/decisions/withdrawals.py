"""Withdrawing a pending request from its card: the requester (or an admin) stops it.

Every pending interrupt of the run is cancelled atomically in storage (a click racing
the withdrawal gets exactly one outcome), the agent's run ends as ``cancelled`` so
nothing it waited on runs, and the card says who withdrew it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from agent_runtime.errors import AgentRuntimeError
from agent_runtime.interrupts import Decision
from agent_runtime.runnable import Runnable
from bot.agents.registry import BUILD_FAILED
from bot.services import Services
from bot.ui.blocks import user_mention
from bot.ui.home import refresh_homes
from bot.ui.notes import post_mrkdwn
from bot.ui.posting import post_ephemeral
from bot.ui.redraws import update_message
from bot.ui.refusals import STORAGE_DOWN, agent_not_built, refusal_text
from bot.ui.requester import tell_decided
from storage.errors import StorageError, StorageTimeoutError
from storage.interrupts import Cancelled
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord
from storage.requests import is_request_run

from .clicked import clicked_record
from .payloads import Click

log = logging.getLogger(__name__)


async def withdraw(services: Services, click: Click) -> None:
    """Withdraw the request whose card's overflow menu ``click`` came from."""
    user, channel, thread = click.user.id, click.container.channel_id, click.thread
    try:
        record = await clicked_record(services, click)
    except StorageError:
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
        )
        return
    if record is None:
        return
    problem = _refusal(services, record, user)
    if problem is not None:
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=problem)
        return
    try:  # before anything is cancelled: a run its agent cannot end would wait on for ever
        agent = _agent(services, record)
    except BUILD_FAILED as exc:
        log.exception("run %s not withdrawn", record.run_id)
        text = agent_not_built(exc, so="the request was not withdrawn and is still pending")
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
        return
    reason = ""  # the card says who withdrew it; Slack gives no reason to quote
    now = services.clock.now()
    try:
        cancelled = await _cancel(services, record, user=user, now=now, reason=reason)
    except StorageError:
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
        )
        return
    try:
        latest = await services.storage.queries.get(record.id) or record
    except StorageError as exc:
        if not cancelled.count:
            await post_ephemeral(
                services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
            )
            return
        log.error("run %s withdrawn, its record not read back: %s", record.run_id, exc)
        latest = _as_cancelled(record, user, now, reason)
    if not cancelled.count:
        outcome = DecideOutcome(status="refused", reason="already_decided", record=latest)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=refusal_text(outcome)
        )
        return
    log.info("run %s withdrawn by %s", record.run_id, user)
    await update_message(services, latest)
    # The run's other cards: cancelled with it, or decided but now never run.
    others = [rid for rid in (*cancelled.ids, *cancelled.not_run) if rid != record.id]
    await _redraw(services, others, drawn={(latest.channel, latest.message_ts)})
    if agent is not None:
        await _cancel_agent_run(services, agent, latest, user)
    await tell_decided(services, latest)
    await refresh_homes(services, latest)


async def _redraw(
    services: Services, record_ids: list[str], *, drawn: set[tuple[str | None, str | None]]
) -> None:
    """Redraw the cards of ``record_ids`` as they now stand, each message once (a batch
    card holds many records; ``drawn``: the messages already redrawn)."""
    try:
        records, _ = await services.storage.queries.many(record_ids)
    except StorageError as exc:
        log.error("cards of the withdrawn run not redrawn: %s", exc)
        return
    for record in records:
        message = (record.channel, record.message_ts)
        if message not in drawn:
            drawn.add(message)
            await update_message(services, record)
            await refresh_homes(services, record)


async def _cancel(
    services: Services, record: InterruptRecord, *, user: str, now: datetime, reason: str
) -> Cancelled:
    """Cancel the record's run. One whose answer timed out (it may have landed) is
    cancelled again, and counts as this withdrawal when the record reads as withdrawn by
    ``user``: otherwise the agent's run would never be cancelled."""
    interrupts = services.storage.interrupts
    try:
        return await interrupts.cancel_run(record.run_id, reason=reason, now=now, by=user)
    except StorageTimeoutError as exc:
        log.warning("run %s: withdrawal not confirmed, trying again: %s", record.run_id, exc)
    again = await interrupts.cancel_run(record.run_id, reason=reason, now=now, by=user)
    if again.count:
        return again
    latest = await services.storage.queries.get(record.id)
    if latest is not None and latest.state == "cancelled" and latest.decided_by == user:
        return Cancelled(ids=(record.id,))
    return again


def _as_cancelled(
    record: InterruptRecord, user: str, now: datetime, reason: str
) -> InterruptRecord:
    """``record`` as the withdrawal left it, for when storage kept the withdrawal but
    failed the read back: the run is still cancelled and the card still redrawn."""
    decision = Decision.reject(reason).to_dict()
    update = {"state": "cancelled", "decided_by": user, "decided_at": now, "decision": decision}
    return record.model_copy(update=update)


def _refusal(services: Services, record: InterruptRecord, user: str) -> str | None:
    """Why ``user`` may not withdraw ``record``, or None when they may."""
    if record.state != "pending":
        outcome = DecideOutcome(status="refused", reason="already_decided", record=record)
        return refusal_text(outcome)
    if user != record.requested_by and user not in services.admins:
        who = user_mention(record.requested_by)
        return f"Only the requester ({who}) or a Signoff admin can withdraw this request."
    return None


def _agent(services: Services, record: InterruptRecord) -> Runnable | None:
    """The agent whose run ``record`` belongs to, built now; None for a job's request or an
    agent this process does not run."""
    if is_request_run(record.run_id) or services.registry.spec(record.agent) is None:
        return None
    return services.registry.agent(record.agent)


async def _cancel_agent_run(
    services: Services, agent: Runnable, record: InterruptRecord, user: str
) -> None:
    """End the agent's run as cancelled and say so in its thread."""
    try:
        ended = await agent.cancel(record.thread_id, f"The request was withdrawn by {user}.")
    except AgentRuntimeError as exc:  # a resume saved first: storage refused it anyway
        log.warning("run %s not cancelled: %s", record.run_id, exc)
        return
    if ended is None:  # it waited on nothing any more: there was no run to cancel
        log.info("run %s had nothing waiting to cancel", record.run_id)
        return
    text = f"Withdrawn by {user_mention(user)}: the run was cancelled; nothing it waited on ran."
    thread = record.thread_ts or record.message_ts
    await post_mrkdwn(services, channel=record.channel, thread_ts=thread, text=text)
