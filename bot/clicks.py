"""Button clicks: acknowledge first, then decide through storage or open a modal.

In HTTP mode ``bot/server.py`` answers a click itself and hands it to a ``ClickQueue``;
in Socket Mode the Bolt listener below acks and does the same. Approve clicks are
decided a few at a time by the queue's drainers, so a burst of clicks neither delays the
next acks nor opens a Redis connection per click; modal buttons skip the queue because
their ``trigger_id`` expires 3 s after the click. Only the interrupt reference in the
button and the clicking user's id are used; storage checks the rest, including that the
click came from the message the interrupt was posted as.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError

from agent_runtime.interrupts import Decision
from storage.errors import StorageError
from storage.outcomes import DecideOutcome

from . import ids
from .cards import card_from_record
from .directory import slack_error
from .modals import args_modal, deny_modal, edit_modal, reply_modal
from .payloads import Click, parse_click
from .poster import post_ephemeral, trust_label, update_message
from .refusals import STORAGE_DOWN, reason_text, refusal_text
from .services import Services

log = logging.getLogger(__name__)

_MODALS = {
    ids.DENY: deny_modal,
    ids.EDIT: edit_modal,
    ids.REPLY: reply_modal,
    ids.FULL_ARGS: args_modal,
}
_DECISIONS = (ids.APPROVE, ids.TRUST)


class ClickQueue:
    """Clicks acknowledged but not yet handled, drained by at most ``drainers`` tasks.

    Drainers are ``Background`` tasks that end when the queue is empty, so shutdown waits
    for queued clicks like any other background work. ``accept`` waits only when ``limit``
    clicks are already queued: the ack then slows down rather than a click being dropped.
    """

    def __init__(self, services: Services, *, drainers: int = 4, limit: int = 4096) -> None:
        self._services = services
        self._queue: asyncio.Queue[Click] = asyncio.Queue(limit)
        self._drainers = drainers
        self._running = 0

    async def accept(self, click: Click) -> None:
        """Queue a decision click; start a modal click's work at once."""
        action = click.action.action_id
        if action in _MODALS:
            self._services.background.spawn(open_modal(self._services, click), name=action)
        elif action in _DECISIONS:
            await self._queue.put(click)
            if self._running < self._drainers:
                self._services.background.spawn(self._drain(), name="clicks")
                self._running += 1

    async def _drain(self) -> None:
        try:
            while True:
                try:
                    click = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    await decide_click(self._services, click)
                except StorageError as exc:
                    log.error(
                        "click by %s on %s not recorded: %s", click.user.id, click.action.value, exc
                    )
                    await post_ephemeral(
                        self._services,
                        channel=click.container.channel_id,
                        user=click.user.id,
                        text=STORAGE_DOWN,
                    )
                except Exception:
                    log.exception("click by %s on %s failed", click.user.id, click.action.value)
        finally:
            self._running -= 1


def signoff_click(payload: dict[str, Any]) -> Click | None:
    """The click in ``payload`` when it is a well-formed click on one of Signoff's buttons."""
    if payload.get("type") != "block_actions":
        return None
    click = parse_click(payload)
    if click is None or click.ref is None or click.action.action_id not in ids.BUTTONS:
        return None
    return click


def listener(services: Services) -> Any:
    """The Bolt action listener for every Signoff button (Socket Mode's path)."""
    queue = ClickQueue(services)

    async def on_click(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = signoff_click(body)
        if click is None:
            log.warning("ignored a malformed click payload")
            return
        await queue.accept(click)

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
