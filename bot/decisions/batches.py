""" "Approve selected" and "Deny all" on a batch card. What is approved is what the
clicker's own card showed ticked (Slack sends the message's checkbox state with the
click); each item is then checked and audited like a click on its own card, all in one
atomic step, and the agent gets one decision per item."""

from __future__ import annotations

import logging

from agent_runtime.interrupts import Decision
from bot.services import Services
from bot.ui import ids
from bot.ui.batch_message import PER_GROUP, damaged_places, excluded_by, numbered
from bot.ui.home import refresh_homes
from bot.ui.posting import post_ephemeral
from bot.ui.redraws import redraw_unconfirmed, update_message
from bot.ui.refusals import DAMAGED_BATCH, STORAGE_DOWN, UNCONFIRMED, reason_text, refusal_text
from bot.ui.requester import tell_batch_decided
from storage.errors import CorruptRecordError, StorageError, StorageTimeoutError
from storage.outcomes import DecideOutcome
from storage.queries import Batch
from storage.records import InterruptRecord

from .damaged import record_damaged
from .late import expire_items
from .payloads import Click

log = logging.getLogger(__name__)


async def decide_batch(services: Services, click: Click) -> None:
    """Decide every waiting item of the batch card ``click`` came from. An item whose
    record is damaged (the lead's too) is left as it is, reported, and told of by its
    number; the others are decided."""
    assert click.ref is not None
    lead_id, user = click.ref.record_id, click.user.id
    channel, ts, thread = click.container.channel_id, click.container.message_ts, click.thread
    try:
        batch = await services.storage.queries.led_by(lead_id)
    except CorruptRecordError as exc:  # the lead's list of its items is what is damaged
        await record_damaged(services, exc, lead_id, user=user, channel=channel)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=DAMAGED_BATCH
        )
        return
    except StorageError:
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
        )
        return
    if batch is None or not batch.records:
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=reason_text("unknown")
        )
        return
    for rid, problem in batch.damaged:
        await record_damaged(services, problem, rid, user=user, channel=channel)
    chosen = _decisions(click, batch, user)
    try:
        outcomes, damaged = await services.storage.interrupts.decide_together(
            [(item.id, decision, item.args_digest) for item, decision in chosen],
            user,
            now=services.clock.now(),
            channel=channel,
            message_ts=ts,
        )
    except StorageTimeoutError as exc:
        log.error("batch %s decided by %s not confirmed: %s", lead_id, user, exc)
        await redraw_unconfirmed(services, lead_id)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=UNCONFIRMED
        )
        return
    except StorageError:
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
        )
        return
    for rid, problem in damaged:
        await record_damaged(services, problem, rid, user=user, channel=channel)
    if batch.damaged:
        await _tell_damaged(services, batch, user=user, channel=channel, thread=thread)
    late = await expire_items(services, outcomes)
    await _report(services, click, outcomes, len(chosen), told=late.told)
    if all(o.status == "refused" for o in outcomes) and not late.stored:
        return  # nothing changed: the card stays as it is
    try:
        latest = await services.storage.queries.led_by(lead_id) or batch
    except StorageError as exc:
        log.error("batch %s decided, its items not read back: %s", lead_id, exc)
        await redraw_unconfirmed(services, lead_id)
        return
    await update_message(services, latest.records[0] if latest.records else batch.records[0])
    if latest.records and all(r.state != "pending" for r in latest.records):
        await tell_batch_decided(services, latest)
        await refresh_homes(services, latest.records[0])


async def _tell_damaged(
    services: Services, batch: Batch, *, user: str, channel: str, thread: str | None
) -> None:
    """Tell the clicker which items could not be read back: left as they are stored."""
    places = sorted(place + 1 for place in damaged_places(batch))
    one = len(places) == 1
    text = (
        f"Item{'' if one else 's'} {', '.join(str(n) for n in places)} of this card could "
        f"not be read back from storage ({'its' if one else 'their'} data is damaged), so "
        f"{'it was' if one else 'they were'} not decided and {'is' if one else 'are'} left "
        "as stored. An operator can see the damage in the audit trail (`signoff audit`)."
    )
    await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)


def _decisions(click: Click, batch: Batch, user: str) -> list[tuple[InterruptRecord, Decision]]:
    """Each waiting item's decision: Deny all denies them; Approve selected approves the
    ticked ones and excludes the others (a group the click's state lacks reads ticked,
    as the card drew it)."""
    ticked = click.ticked
    chosen = []
    for index, item in numbered(batch):
        if item.state != "pending":
            continue
        if click.action.action_id == ids.BATCH_DENY:
            decision = Decision.reject(f"Denied with the whole batch by {user}")
        else:
            group = ticked.get(index - index % PER_GROUP)
            keep = group is None or index in group
            decision = Decision.approve() if keep else excluded_by(user)
        chosen.append((item, decision))
    return chosen


async def _report(
    services: Services,
    click: Click,
    outcomes: list[DecideOutcome],
    asked: int,
    *,
    told: dict[int, str],
) -> None:
    """Count the decisions; tell the clicker about refusals (once, with how many, and why
    when they share a reason: whose decision came first only when it is the same for all).
    ``told``: what an item refused as past its deadline has stored, by its place."""
    refused = [o for o in outcomes if o.status == "refused"]
    texts = [
        told.get(i) or refusal_text(o) for i, o in enumerate(outcomes) if o.status == "refused"
    ]
    for outcome in outcomes:
        if outcome.status == "recorded" and outcome.state:
            services.metrics.decisions[outcome.state] += 1
        elif outcome.status == "refused":
            services.metrics.refusals[outcome.reason or "unknown"] += 1
    if not refused:
        return
    if len({o.reason for o in refused}) > 1:
        text = (
            f"{len(refused)} of {asked} items were not decided, for more than one reason; "
            "the card shows where each stands."
        )
    elif len(set(texts)) > 1:  # decided first (or by their expiry), not all alike
        text = (
            f"{len(refused)} of {asked} items were decided already, not all the same way; "
            "the card shows how."
        )
    else:
        text = texts[0]
        if len(refused) < asked:
            text = f"{len(refused)} of {asked} items: {text}"
    user, channel, thread = click.user.id, click.container.channel_id, click.thread
    await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
