"""Deciding from App Home's list: Approve records the decision at once; Deny opens the
same modal as on the card. Storage checks the clicker, the request's state and that the
arguments are the ones the list showed, exactly as for a click on the card."""

from __future__ import annotations

import logging
import secrets

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError

from agent_runtime.interrupts import Decision
from bot.services import Services
from bot.ui import ids
from bot.ui.blocks import date_token
from bot.ui.cards import card_from_record
from bot.ui.home import refresh_homes, show_home
from bot.ui.modals import deny_modal
from bot.ui.redraws import update_message
from bot.ui.refusals import FORM_NOT_OPENED, STORAGE_DOWN, reason_text, refusal_text
from bot.ui.requester import tell_decided
from bot.ui.slack_failures import why_failed
from storage.errors import StorageError
from storage.outcomes import DecideOutcome, RefusalReason

from .late import expired_text
from .payloads import Ref

log = logging.getLogger(__name__)


async def decide_from_home(
    services: Services, *, user: str, action_id: str, value: str, trigger_id: str
) -> None:
    """Approve (or open Deny for) the request a Home button names; a refusal is shown at
    the top of the viewer's Home, which stays on the pages they were on."""
    ref = Ref.parse(value)
    if ref is None:
        return
    try:
        if action_id == ids.HOME_DENY:
            await _open_deny(services, ref, user=user, trigger_id=trigger_id)
            return
        outcome = await services.storage.interrupts.decide(
            ref.record_id,
            user,
            Decision.approve(),
            args_digest=ref.digest,
            now=services.clock.now(),
            # Sent again after its reply was lost, it is answered as it was the first time.
            click_id=f"home-{secrets.token_hex(8)}",
        )
    except StorageError as exc:
        log.error("Home decision by %s not recorded: %s", user, exc)
        await show_home(services, user, notice=STORAGE_DOWN)
        return
    if outcome.status == "refused" or (outcome.status == "replayed" and outcome.reason):
        services.metrics.refusals[outcome.reason or "unknown"] += 1
        notice = refusal_text(outcome)
        if outcome.status == "refused" and outcome.reason == "expired":  # no click is queued
            notice = await expired_text(services, outcome, own_clicks=0)
        await show_home(services, user, notice=notice)
        return
    record = outcome.record
    if record is None:
        return
    if outcome.status == "recorded":
        services.metrics.decisions[record.state] += 1
    await update_message(services, record)
    if record.state != "pending":
        await tell_decided(services, record)
        await refresh_homes(services, record)
    elif record.held is not None:  # the policy's undo window: it can still be taken back
        when = date_token(record.held.until, template="{time_secs}")
        notice = f"Decided: it takes effect at {when} unless someone clicks Undo on its card."
        await show_home(services, user, notice=notice)
        await refresh_homes(services, record, except_for=user)
    else:  # a vote toward a quorum: the viewer's Home says so
        counted = f"Your approval is counted ({outcome.approvals} of {outcome.required})."
        await show_home(services, user, notice=counted)


async def _open_deny(services: Services, ref: Ref, *, user: str, trigger_id: str) -> None:
    record = await services.storage.queries.get(ref.record_id)
    if record is None:
        await show_home(services, user, notice=reason_text("unknown"))
        return
    late: RefusalReason | None = (
        "already_decided" if record.state != "pending" else "held" if record.held else None
    )
    if late is not None:  # what became of it, as its card says: decided, expired, withdrawn
        refused = DecideOutcome(status="refused", reason=late, record=record)
        await show_home(services, user, notice=refusal_text(refused))
        return
    try:
        await services.client.views_open(
            trigger_id=trigger_id, view=deny_modal(card_from_record(record))
        )
    except (SlackApiError, ClientError, TimeoutError, OSError) as exc:
        log.warning("Deny modal for %s not opened: %s", record.id, why_failed(exc))
        await show_home(services, user, notice=FORM_NOT_OPENED)
