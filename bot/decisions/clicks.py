"""Button clicks: queue a decision durably and acknowledge, or open a modal.

In HTTP mode ``bot/slack/events.py`` hands a click to ``intake`` and then answers Slack; in
Socket Mode the Bolt listener below does the same. ``intake`` appends an Approve (or
Approve and trust) click to storage's click stream, one Redis round trip, so a click
Slack saw acknowledged is decided even if this process dies; the process's deciders
(``bot.decisions.deciders``, run by ``Loops``) call ``decide_click``. Modal buttons skip the
stream (``modal_clicks``): their ``trigger_id`` expires 3 s after the click. Only the
interrupt reference in the button and the clicking user's id are used; storage checks the
rest, including that the click came from the message the interrupt was posted as.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from agent_runtime.interrupts import Decision
from bot.services import Services
from bot.services.ack_budget import ACK_BUDGET
from bot.services.log_context import log_ids
from bot.services.tracing import span
from bot.ui import ids
from bot.ui.home import redraw_homes, refresh_homes
from bot.ui.posting import post_ephemeral
from bot.ui.redraws import update_message
from bot.ui.refusals import DAMAGED, STORAGE_DOWN, UNCONFIRMED, reason_text, refusal_text
from bot.ui.requester import tell_decided
from bot.ui.untold import holding_refusal
from storage.clicks import ClickEntry
from storage.errors import CorruptRecordError, StorageError, StorageTimeoutError
from storage.ids import is_record_id
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord
from storage.refusals import Refusal
from storage.requests import is_request_run
from storage.sweeps import POST_LEASE

from .batches import decide_batch
from .clicked import named_record
from .damaged import record_damaged
from .group_refresh import refresh_groups
from .late import expired_text
from .modal_clicks import MODAL_BUTTONS, open_modal
from .payloads import Click, parse_click
from .trust_grants import grant_trust, keep_trust, resume_after_grant, tell_not_kept
from .undo import undo
from .withdrawals import withdraw

log = logging.getLogger(__name__)

_DECISIONS = (ids.APPROVE, ids.TRUST)


def streamed(click: Click) -> bool:
    """Whether ``intake`` queues ``click`` on the click stream: a decision, whose id there
    is its trigger id's digest, decided once, so the click replayed decides nothing."""
    action = click.action.action_id
    return click.ref is not None and (click.choice is not None or action in _DECISIONS)


async def intake(services: Services, click: Click) -> None:
    """Take a click (its log lines tagged with the request, the user, the channel and the
    interaction's trigger id); see ``_intake``."""
    ref = click.ref
    with log_ids(
        record_id=ref.record_id if ref else None,
        user=click.user.id,
        channel=click.container.channel_id,
        slack_request=click.trigger_id,
    ):
        await _intake(services, click)


async def _intake(services: Services, click: Click) -> None:
    """Take a click Slack is about to get its ack for: a decision is appended to the click
    stream (one round trip, so it outlives this process; a long record id's short key is
    looked up first); a modal opens at once.

    When Redis refuses the connection the click is not kept, and the clicker is told so.
    When Redis does not answer within ``ACK_BUDGET`` (stalled, or timing out) the append
    may still land, so the clicker is told it is not confirmed yet: the card shows what
    happens. Either note is sent in the background, after the ack.
    """
    action, ref = click.action.action_id, click.ref
    assert ref is not None
    if action in MODAL_BUTTONS:
        services.background.spawn(open_modal(services, click), name=action)
        return
    if action == ids.MORE:
        services.background.spawn(withdraw(services, click), name=action)
        return
    if action == ids.UNDO:
        services.background.spawn(undo(services, click), name=action)
        return
    if action in ids.BATCH_BUTTONS:
        services.background.spawn(decide_batch(services, click), name=action)
        return
    if not streamed(click):
        return
    if click.choice is not None:
        action = f"{ids.CHOOSE}.{click.choice}"
    user, channel, named, digest = (
        click.user.id,
        click.container.channel_id,
        ref.record_id,
        ref.digest,
    )

    async def append() -> bool:
        record_id = await named_record(services, named)
        if record_id is None:  # a short key no pending record of its run has
            return False
        await services.storage.clicks.append(
            record_id=record_id,
            digest=digest,
            user_id=user,
            channel_id=channel,
            message_ts=click.container.message_ts,
            action_id=action,
            clicked_at=services.clock.now(),
            trigger_id=click.trigger_id or "",
            thread_ts=click.thread or "",
        )
        return True

    try:
        if await asyncio.wait_for(append(), ACK_BUDGET):
            log.debug("click %s queued", action)
            return
        text = reason_text("not_pending")
    except TimeoutError:
        log.error("click by %s on %s: Redis did not confirm it in time", user, ref.record_id)
        text = UNCONFIRMED
    except StorageError as exc:
        log.error("click by %s on %s not recorded: %s", user, ref.record_id, exc)
        # A timed-out append may still have run; a refused connection ran nothing.
        text = UNCONFIRMED if isinstance(exc, StorageTimeoutError) else STORAGE_DOWN
    note = post_ephemeral(services, channel=channel, user=user, thread_ts=click.thread, text=text)
    services.background.spawn(note, name="click-not-confirmed")


def signoff_click(payload: dict[str, Any]) -> Click | None:
    """The click in ``payload`` when it is a well-formed click on one of Signoff's buttons."""
    if payload.get("type") != "block_actions":
        return None
    click = parse_click(payload)
    if click is None or click.ref is None:
        return None
    action = click.action.action_id
    if action not in ids.BUTTONS and action not in ids.BATCH_BUTTONS and click.choice is None:
        return None
    return click


def listener(services: Services) -> Any:
    """The Bolt action listener for every Signoff button (Socket Mode's path).

    Bolt sends the ack when the listener returns (``process_before_response``), so a
    decision click is in the click stream before Slack hears back, as in HTTP mode.
    """

    async def on_click(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = signoff_click(body)
        if click is None:
            log.warning("ignored a malformed click payload")
            return
        await intake(services, click)

    return on_click


async def decide_click(services: Services, entry: ClickEntry) -> Refusal | None:
    """Decide a click from the stream, its log lines tagged; see ``_decide_click``. The
    refusal this call stored and told its clicker, for ``ClickStream.done`` to take off
    the untold ones."""
    with log_ids(
        record_id=entry.record_id,
        run_id=entry.record_id.partition("/")[0],  # a record id is "<run id>/<interrupt id>"
        user=entry.user_id,
        channel=entry.channel_id,
        slack_request=entry.trigger_id,
    ):
        trace = await _traceparent(services, entry.record_id)
        with span(
            "signoff.decision",
            traceparent=trace,
            record_id=entry.record_id,
            user=entry.user_id,
            action=entry.action_id,
        ):
            return await _decide_click(services, entry)


async def _traceparent(services: Services, record_id: str) -> str | None:
    """The trace a job's request joined, so its decision's span is in that trace."""
    run_id = record_id.split("/", 1)[0]
    if not is_request_run(run_id):
        return None
    try:
        meta = await services.storage.requests.meta(run_id)
    except StorageError:
        return None
    return meta.traceparent if meta else None


async def _decide_click(services: Services, entry: ClickEntry) -> Refusal | None:
    """Record an Approve (or Approve and trust) click, or the answer a question's button
    picked; refuse with an ephemeral note.

    The click is judged as of when it was acknowledged, not when a decider gets to it: a
    click in time still counts when a backlog or a dead decider delays it past the
    expiry (unless the expiry sweep came first); a click made after it stores the expiry
    the sweep would (``late``), so its refusal tells what is stored. Storage decides each
    click entry once: a replay (a reclaimed entry whose decider died after deciding) sends
    nothing but, if the click counted, the message re-rendered from the record and, if it
    made the decision final, what the dead decider may not have done yet: a trust grant
    kept (and then the run's resume queued, which storage holds back until the grant is
    kept), the requester told (each once, however many deciders replay it). A refusal is
    queued in the step that stores it, until this decider has told it: should it die
    first, the scheduler tells it (``tell_untold_refusals``).
    """
    user, channel, thread = entry.user_id, entry.channel_id, entry.thread_ts or None
    refusal = Refusal(
        record_id=entry.record_id,
        click=entry.click_id,
        user=user,
        channel=channel,
        thread_ts=entry.thread_ts,
    )
    decision = Decision.approve()
    if entry.action_id.startswith(ids.CHOOSE + "."):
        chosen = await _chosen(services, entry)
        if chosen is None:
            text = reason_text("not_offered")  # a forged index: the card never showed it
            await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
            return None
        decision = Decision.respond(chosen)
    elif entry.action_id == ids.TRUST:
        try:
            record = await services.storage.queries.get(entry.record_id)
        except CorruptRecordError:
            record = None  # the decision below is refused as damaged, and reported
        agent_run = record is not None and not is_request_run(record.run_id)
        spec = services.registry.spec(record.agent) if record and agent_run else None
        # A quorum is asked every time, and no trust covers an interrupt a tool's own code
        # raised: their cards offer no trust, nor does a forged click get it.
        if (
            record is not None
            and spec is not None
            and record.policy.min_approvals == 1
            and record.runtime_interrupt.is_approval
        ):
            call = record.runtime_interrupt.tool_call
            remember = spec.policy_for(call.name if call else None).trust
            decision = Decision.approve(remember=remember)

    # A trust for minutes is a grant, stored before the run resumes (keep_trust).
    granting = decision.remember is not None and decision.remember.scope == "minutes"
    untold_until = services.clock.now() + POST_LEASE  # then another process may tell it

    async def decide(click_id: str) -> DecideOutcome:
        return await services.storage.interrupts.decide(
            entry.record_id,
            user,
            decision,
            args_digest=entry.digest,
            now=entry.clicked_at,
            channel=channel,
            message_ts=entry.message_ts,
            click_id=click_id,
            hold_for_grant=granting,
            untold=(refusal, untold_until),
        )

    try:
        outcome = await decide(entry.click_id)
    except CorruptRecordError as exc:
        await record_damaged(services, exc, entry.record_id, user=user, channel=channel)
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=DAMAGED)
        return None  # decided for good: nothing can be decided on it; retrying would loop
    if outcome.reason == "not_allowed" and await refresh_groups(services, outcome.record, user):
        outcome = await decide(f"{entry.click_id}-regrouped")  # the first is marked refused
    if outcome.status == "replayed" and outcome.reason is not None:
        return None  # told by the decider that stored it, or else by the scheduler
    if outcome.status == "refused":
        services.metrics.refusals[outcome.reason or "unknown"] += 1
        if outcome.reason == "expired":  # the click is still in the stream: one of its own
            text = await expired_text(services, outcome, own_clicks=1)
        else:
            text = refusal_text(outcome)
        telling = post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
        if not is_record_id(entry.record_id):  # a forged id, refused as unknown: none queued
            await telling
            return refusal
        # Held while Slack takes it, however slow, so no scheduler tells it too.
        shard = services.storage.keys.shard_of_record(entry.record_id)
        await holding_refusal(services, shard, refusal.member, untold_until, telling)
        return refusal
    if outcome.status == "recorded":
        services.metrics.decisions[outcome.state or "approved"] += 1
    final = outcome.status == "recorded" or (
        outcome.status == "replayed" and outcome.first == "recorded"
    )
    made = (
        outcome.record if final and outcome.record and outcome.record.state != "pending" else None
    )
    if made is not None:
        await keep_trust(services, made)  # then the run resumes, and the card says so
    if outcome.record is not None:
        await update_message(services, outcome.record)
    if made is not None:
        news = decided_news(services, made)  # after the click is acknowledged
        services.background.spawn(news, name=f"decided {made.id}")
    elif outcome.status == "held" and outcome.record is not None:
        # Held in its undo window: the approvers' Homes say so, and offer it no more.
        held = refresh_homes(services, outcome.record)
        services.background.spawn(held, name=f"held {outcome.record.id}")
    elif outcome.status == "progress":  # a vote toward the quorum: the voter's Home says so
        voted = redraw_homes(services, [user], after=f"a vote on {entry.record_id}")
        services.background.spawn(voted, name=f"voted {entry.record_id}")
    return None


async def decided_news(services: Services, record: InterruptRecord) -> None:
    """Tell whom a final decision concerns: the requester, and the approvers' App Homes."""
    await tell_decided(services, record)
    await refresh_homes(services, record)


async def made_final(services: Services, record: InterruptRecord) -> None:
    """A decision held in its undo window became final: what a click's decision does, its
    trust kept, and then its run's resume queued (storage holds it back until then),
    before its card is drawn. Redis failing as the resume is queued leaves it to the
    sweep, which hands this decision out again (``GRANT_LEASE``)."""
    kept = True
    try:
        await grant_trust(services, record)
    except StorageError as exc:
        log.error("interrupt %s: trust not kept: %s", record.id, exc)
        kept = False
    try:
        await resume_after_grant(services, record)
    except StorageError as exc:
        log.error("interrupt %s: resume not queued, the sweep tries again: %s", record.id, exc)
    await update_message(services, record)
    if not kept:
        await tell_not_kept(services, record)
    await decided_news(services, record)


async def _chosen(services: Services, entry: ClickEntry) -> str | None:
    """The answer a choice click picked, read from the stored question (never the payload);
    None when the question has no such answer. A missing or damaged record is left for
    ``decide`` to refuse and report."""
    try:
        record = await services.storage.queries.get(entry.record_id)
    except CorruptRecordError:
        return ""
    if record is None:
        return ""
    options = record.runtime_interrupt.options
    index = int(entry.action_id.removeprefix(ids.CHOOSE + "."))
    return options[index] if index < len(options) else None
