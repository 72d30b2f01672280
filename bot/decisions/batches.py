""" "Approve selected" and "Deny all" on a batch card. What is approved is what the
clicker's own card showed ticked (Slack sends the message's checkbox state with the
click); each item is then checked and audited like a click on its own card, all in one
atomic step, and the agent gets one decision per item."""

from __future__ import annotations

import logging

from agent_runtime.interrupts import Decision
from bot.services import Services
from bot.ui import ids
from bot.ui.batch_message import PER_GROUP, excluded_by, numbered
from bot.ui.home import refresh_homes
from bot.ui.posting import post_ephemeral, redraw_unconfirmed, update_message
from bot.ui.refusals import DAMAGED, STORAGE_DOWN, UNCONFIRMED, reason_text, refusal_text
from bot.ui.requester import tell_batch_decided
from storage.errors import CorruptRecordError, StorageError, StorageTimeoutError
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord

from .damaged import record_damaged
from .payloads import Click

log = logging.getLogger(__name__)


async def decide_batch(services: Services, click: Click) -> None:
    """Decide every waiting item of the batch card ``click`` came from."""
    assert click.ref is not None
    lead_id, user = click.ref.record_id, click.user.id
    channel, ts = click.container.channel_id, click.container.message_ts
    try:
        lead = await services.storage.queries.get(lead_id)
        items: list[InterruptRecord] = []
        damaged_items = 0
        if lead is not None and lead.batch == lead.id:
            items, unreadable = await services.storage.queries.many(lead.batch_items)
            damaged_items = await _damaged(services, unreadable, user=user, channel=channel)
    except CorruptRecordError as exc:
        await record_damaged(services, exc, lead_id, user=user, channel=channel)
        await post_ephemeral(services, channel=channel, user=user, text=DAMAGED)
        return
    except StorageError:
        await post_ephemeral(services, channel=channel, user=user, text=STORAGE_DOWN)
        return
    if not items:
        await post_ephemeral(services, channel=channel, user=user, text=reason_text("unknown"))
        return
    if damaged_items:
        text = (
            f"{damaged_items} of this card's items could not be read back from storage (their "
            "data is damaged), so they were not decided; an operator can see them in the "
            "audit trail (`signoff audit`)."
        )
        await post_ephemeral(services, channel=channel, user=user, text=text)
    chosen = _decisions(click, items, user)
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
        await post_ephemeral(services, channel=channel, user=user, text=UNCONFIRMED)
        return
    except StorageError:
        await post_ephemeral(services, channel=channel, user=user, text=STORAGE_DOWN)
        return
    for rid, problem in damaged:
        await record_damaged(services, problem, rid, user=user, channel=channel)
    await _report(services, click, outcomes, len(chosen))
    if all(o.status == "refused" for o in outcomes):
        return  # nothing changed: the card stays as it is
    try:
        latest, _ = await services.storage.queries.many([item.id for item in items])
    except StorageError as exc:
        log.error("batch %s decided, its items not read back: %s", lead_id, exc)
        await redraw_unconfirmed(services, lead_id)
        return
    await update_message(services, latest[0] if latest else items[0])
    if latest and all(r.state != "pending" for r in latest):
        await tell_batch_decided(services, latest)
        await refresh_homes(services, latest[0])


async def _damaged(services: Services, ids: list[str], *, user: str, channel: str) -> int:
    """How many of ``ids`` (items ``many`` could not read) are damaged rather than gone;
    each is logged, counted and audited as such."""
    damaged = 0
    for rid in ids:
        try:
            await services.storage.queries.get(rid)
        except CorruptRecordError as exc:
            await record_damaged(services, exc, rid, user=user, channel=channel)
            damaged += 1
    return damaged


def _decisions(
    click: Click, items: list[InterruptRecord], user: str
) -> list[tuple[InterruptRecord, Decision]]:
    """Each waiting item's decision: Deny all denies them; Approve selected approves the
    ticked ones and excludes the others (a group the click's state lacks reads ticked,
    as the card drew it)."""
    ticked = click.ticked
    chosen = []
    for index, item in numbered(items):
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
    services: Services, click: Click, outcomes: list[DecideOutcome], asked: int
) -> None:
    """Count the decisions; tell the clicker about refusals (once, with how many, and why
    when they share a reason)."""
    refused = [o for o in outcomes if o.status == "refused"]
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
    else:
        text = refusal_text(refused[0])
        if len(refused) < asked:
            text = f"{len(refused)} of {asked} items: {text}"
    user, channel = click.user.id, click.container.channel_id
    await post_ephemeral(services, channel=channel, user=user, text=text)
