"""Redrawing a card in place when its request's state changes.

Every copy of a card (its escalation cards too) is drawn from the stored record, which is
read again after the draw, so Slack is left showing the latest state. A redraw Slack did
not take for a passing reason is queued, and the scheduler draws the card again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from datetime import timedelta
from functools import partial

from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.services import Services
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.sweeps import POST_LEASE

from .card_forms import CardForms, card_forms, send_fitting
from .message import SlackMessage
from .slack_failures import SLACK_FAILURES, passing, retry_after, why_failed

log = logging.getLogger(__name__)


async def update_message(services: Services, record: InterruptRecord) -> bool:
    """Redraw the interrupt's message in place (``chat.update`` from the stored channel/ts),
    and its escalation card when it has one: every copy shows the same state.

    Then the stored record is read again: a step that landed while this one was drawn
    (whose own redraw may have reached Slack first) is drawn again, so Slack is left
    showing the latest state, never an older one. True once it is drawn (or Slack refused
    it for good, a deleted message); False while a redraw is owed: a copy Slack did not
    take for a passing reason (queued to be redrawn), or Redis failed before the draw."""
    drawn: SlackMessage | None = None
    for _ in range(_REDRAWS):
        try:
            forms = await card_forms(services, record)
        except StorageError as exc:
            log.error("interrupt %s: its batch card not redrawn: %s", record.id, exc)
            return False
        if forms.full == drawn:
            return True
        failure = await _update_copies(services, record, forms)
        if failure is not None and passing(failure):
            await _redraw_later(services, record, failure)
            return False
        drawn = forms.full
        try:
            latest = await services.storage.queries.get(record.id)
        except StorageError as exc:
            log.warning("interrupt %s: not read again after its redraw: %s", record.id, exc)
            return True
        if latest is None:
            return True
        record = latest
    return True


async def _redraw_later(
    services: Services, record: InterruptRecord, failure: BaseException
) -> None:
    wait = max(timedelta(seconds=retry_after(failure) or 0), POST_LEASE)
    try:
        await services.storage.interrupts.redraw_later(record.id, at=services.clock.now() + wait)
    except StorageError as exc:
        log.error("interrupt %s: its redraw not queued: %s", record.id, exc)
        return
    log.info("interrupt %s: its card will be redrawn in %ds", record.id, wait.total_seconds())


async def redraw_unconfirmed(services: Services, record_id: str) -> None:
    """Queue a redraw of a card whose decision (or undo) timed out in Redis: it may have
    landed, and the card then shows it rather than buttons of a state that has passed."""
    try:
        await services.storage.interrupts.redraw_later(
            record_id, at=services.clock.now() + POST_LEASE
        )
    except StorageError as exc:
        log.error("interrupt %s: its redraw not queued: %s", record_id, exc)


_REDRAWS = 3
"""At most this many draws per update: each further one follows a step that landed during
the previous one."""


async def _update_copies(
    services: Services, record: InterruptRecord, forms: CardForms
) -> BaseException | None:
    """Draw ``forms`` on every copy of the card (one this process posted but Redis did not
    record too); a failure worth trying again if one failed so, else the last failure, if
    any failed."""
    failure: BaseException | None = None
    copies = [(record.channel, record.message_ts), *record.escalation_cards]
    if record.escalation_channel and record.escalation_ts:
        copies.append((record.escalation_channel, record.escalation_ts))
    if record.message_ts is None and (unrecorded := services.unrecorded_posts.get(record.id)):
        copies.append(unrecorded)  # Slack took it, Redis did not record it: decided since
    for channel, ts in copies:
        if not channel or not ts:
            continue
        try:
            await send_fitting(record, forms, partial(_update, services, channel, ts))
        except SLACK_FAILURES as exc:
            log.error(
                "interrupt %s: message in %s not updated: %s", record.id, channel, why_failed(exc)
            )
            if failure is None or not passing(failure):
                failure = exc
    return failure


def _update(
    services: Services, channel: str, ts: str, shown: SlackMessage
) -> Awaitable[AsyncSlackResponse]:
    return services.client.chat_update(channel=channel, ts=ts, text=shown.text, blocks=shown.blocks)
