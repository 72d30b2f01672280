"""Button clicks: acknowledge first, then decide through storage or open a modal.

Listeners run with ``process_before_response=True``: each calls ``ack()`` at once and
hands the rest to ``Background``, so Slack's answer never waits for Redis or the Web API.
Only the interrupt reference in the button and the clicking user's id are used; storage
checks the rest, including that the click came from the message the interrupt was posted as.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError

from agent_runtime.interrupts import Decision
from storage.outcomes import DecideOutcome

from . import ids
from .cards import card_from_record
from .directory import slack_error
from .modals import args_modal, deny_modal, edit_modal, reply_modal
from .payloads import Click, parse_click
from .poster import post_ephemeral, trust_label, update_message
from .refusals import reason_text, refusal_text
from .services import Services

log = logging.getLogger(__name__)

_MODALS = {
    ids.DENY: deny_modal,
    ids.EDIT: edit_modal,
    ids.REPLY: reply_modal,
    ids.FULL_ARGS: args_modal,
}


def listener(services: Services) -> Any:
    """The Bolt action listener for every Signoff button."""

    async def on_click(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = parse_click(body)
        if click is None or click.ref is None:
            log.warning("ignored a malformed click payload")
            return
        action = click.action.action_id
        if action in (ids.APPROVE, ids.TRUST):
            services.background.spawn(decide_click(services, click), name=f"click {action}")
        elif action in _MODALS:
            services.background.spawn(open_modal(services, click), name=f"modal {action}")

    return on_click


async def decide_click(services: Services, click: Click) -> None:
    """Record an Approve (or Approve and trust) click; refuse with an ephemeral note."""
    ref = click.ref
    assert ref is not None
    user, channel = click.user.id, click.container.channel_id
    remember = None
    if click.action.action_id == ids.TRUST:
        record = await services.storage.queries.get(ref.record_id)
        spec = services.registry.spec(record.agent) if record else None
        if record is not None and spec is not None:
            call = record.runtime_interrupt.tool_call
            remember = spec.policy_for(call.name if call else None).trust
    outcome = await services.storage.interrupts.decide(
        ref.record_id,
        user,
        Decision.approve(remember=remember),
        args_digest=ref.digest,
        now=services.clock.now(),
        channel=channel,
        message_ts=click.container.message_ts,
    )
    if outcome.status == "refused":
        services.metrics.refusals[outcome.reason or "unknown"] += 1
        await post_ephemeral(services, channel=channel, user=user, text=refusal_text(outcome))
        return
    if outcome.status == "recorded":
        services.metrics.decisions[outcome.state or "approved"] += 1
    if outcome.record is not None:
        await update_message(services, outcome.record)


async def open_modal(services: Services, click: Click) -> None:
    """Open the Edit / Deny / Reply / full-arguments modal for a pending interrupt.

    ``trigger_id`` lives 3 s, so this runs right after the ack: one Redis read, then
    ``views.open``. Who may decide is checked again when the modal is submitted.
    """
    ref = click.ref
    assert ref is not None
    user, channel = click.user.id, click.container.channel_id
    record = await services.storage.queries.get(ref.record_id)
    if record is None or (record.channel, record.message_ts) != (
        channel,
        click.container.message_ts,
    ):
        text = reason_text("wrong_message" if record else "unknown")
        await post_ephemeral(services, channel=channel, user=user, text=text)
        return
    if record.state != "pending" and click.action.action_id != ids.FULL_ARGS:
        outcome = DecideOutcome(status="refused", reason="already_decided", record=record)
        await post_ephemeral(services, channel=channel, user=user, text=refusal_text(outcome))
        return
    card = card_from_record(record, trust_label=trust_label(services, record))
    view = _MODALS[click.action.action_id](card)
    try:
        await services.client.views_open(trigger_id=click.trigger_id, view=view)
    except SlackApiError as exc:
        log.warning("modal for %s not opened: %s", record.id, slack_error(exc))
