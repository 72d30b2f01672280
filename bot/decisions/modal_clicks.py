"""A click on Edit, Deny, Reply or the full arguments: its modal opened at once, since the
click's ``trigger_id`` expires 3 s after it; a decision is submitted from the modal."""

from __future__ import annotations

import logging

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError

from bot.agents.registry import BUILD_FAILED
from bot.services import Services
from bot.ui import ids
from bot.ui.batch_message import damaged_places, item_args, numbered
from bot.ui.card_forms import trust_label
from bot.ui.cards import card_from_record, verdict_from_record
from bot.ui.modals import args_modal, batch_details_modal, deny_modal, edit_modal, reply_modal
from bot.ui.posting import post_ephemeral
from bot.ui.refusals import (
    FORM_NOT_OPENED,
    STORAGE_DOWN,
    agent_not_built,
    reason_text,
    refusal_text,
)
from bot.ui.slack_failures import why_failed
from storage.errors import StorageError
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord

from .clicked import clicked_record
from .edit_form import edit_fields
from .group_refresh import refresh_groups
from .payloads import Click, opened_from
from .submissions import replies_allowed

log = logging.getLogger(__name__)

_MODALS = {
    ids.DENY: deny_modal,
    ids.EDIT: edit_modal,
    ids.REPLY: reply_modal,
    ids.FULL_ARGS: args_modal,
}
MODAL_BUTTONS = frozenset(_MODALS)
"""The buttons whose click opens a modal rather than deciding."""
_OFFERED_AS = {ids.DENY: "reject", ids.EDIT: "edit", ids.REPLY: "respond"}
"""The decision each modal submits, which the request's policy must offer."""


async def open_modal(services: Services, click: Click) -> None:
    """Open the Edit / Deny / Reply / full-arguments modal for a pending interrupt.

    ``trigger_id`` lives 3 s, so this runs right after the ack: one Redis read, then
    ``views.open``. Who may decide is checked again when the modal is submitted, as a
    click on the message it was opened from.
    """
    user, channel, thread = click.user.id, click.container.channel_id, click.thread
    try:
        record = await clicked_record(services, click)
    except StorageError as exc:
        log.error("modal not opened, its record not read: %s", exc)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
        )
        return
    if record is None:
        return
    message_ts = click.container.message_ts
    reads_only = click.action.action_id == ids.FULL_ARGS  # the card's whole text: anyone's
    if not reads_only and not _may_submit_from(record, user, channel, message_ts):
        outcome = DecideOutcome(status="refused", reason="not_allowed", record=record)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=refusal_text(outcome)
        )
        return
    if record.state != "pending" and not reads_only:
        outcome = DecideOutcome(status="refused", reason="already_decided", record=record)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=refusal_text(outcome)
        )
        return
    submits = _OFFERED_AS.get(click.action.action_id)
    forged_reply = submits == "respond" and not replies_allowed(record)
    if submits is not None and (submits not in record.policy.decisions or forged_reply):
        text = reason_text("not_offered")  # a forged button: the card never showed it
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
        return
    card = card_from_record(record, trust_label=trust_label(services, record))
    if click.action.action_id == ids.EDIT:
        try:
            fields = await edit_fields(services, record)
        except BUILD_FAILED as exc:  # its tool's fields are unknown: no form to fill
            log.exception("edit form for %s not opened", record.id)
            text = agent_not_built(exc, so="the edit form was not opened; nothing was decided")
            await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
            return
        view = edit_modal(card, fields)
    elif click.action.action_id == ids.FULL_ARGS and record.batch is not None:
        try:
            batch = await services.storage.queries.batch_card(record)
        except StorageError as exc:
            log.error("batch details not opened, its items not read: %s", exc)
            await post_ephemeral(
                services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
            )
            return
        items = [(n, item_args(r)) for n, r in numbered(batch)]
        view = batch_details_modal(card, items, damaged_places(batch))
    elif click.action.action_id == ids.FULL_ARGS:
        view = args_modal(card, verdict_from_record(record))
    else:
        view = _MODALS[click.action.action_id](card)
    view["private_metadata"] = opened_from(view["private_metadata"], channel, message_ts)
    try:
        await services.client.views_open(trigger_id=click.trigger_id, view=view)
    except (SlackApiError, ClientError, TimeoutError, OSError) as exc:
        log.warning("modal for %s not opened: %s", record.id, why_failed(exc))
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=FORM_NOT_OPENED
        )
        return
    if not reads_only:  # a decision will be submitted from it
        # The submission must be answered within 3 s, too soon to ask Slack about groups.
        await refresh_groups(services, record, user)


def _may_submit_from(record: InterruptRecord, user: str, channel: str, message_ts: str) -> bool:
    """Whether a modal opened here may decide: a submission does not say where it came
    from, so an escalation open to its channel's members opens only from a card in that
    channel."""
    policy, reached = record.policy, record.reached_rungs
    if not any(rung.open_to_channel for rung in reached):
        return True
    named = policy.deciders
    named += tuple(u for rung in reached for u in rung.deciders)
    if policy.open_to_channel or user in named:
        return True
    cards = {(record.escalation_channel, record.escalation_ts), *record.escalation_cards}
    return (channel, message_ts) in cards and any(
        rung.open_to_channel and (rung.channel or record.channel) == channel for rung in reached
    )
