"""Telling the person who started a run what became of their request.

They hear of each decision, expiry, escalation and the run's end once: as a mention in
the run's thread when they asked in that channel, else in a direct message with a link
to the card. Requests from jobs (a client name, not a person) are told by their API.
"""

from __future__ import annotations

import logging

from bot.services import Services
from storage.errors import StorageError
from storage.queries import Batch
from storage.records import InterruptRecord

from .batch_message import item_outcome
from .blocks import is_user_id, user_mention
from .cards import card_from_record, verdict_from_record
from .deciders import escalated_to
from .message import verdict_note
from .mrkdwn import code_span, escape_truncate
from .notes import direct_channel, post_direct, post_mrkdwn, post_once
from .posting import permalink

log = logging.getLogger(__name__)


async def tell_decided(services: Services, record: InterruptRecord) -> None:
    """The request was decided or expired: say how, and by whom (not to the decider), once
    however many times its decision is followed up (a click replayed after its decider died)."""
    verdict = verdict_from_record(record)
    if verdict is None or record.requested_by in verdict.by:
        return
    note = verdict_note(card_from_record(record), verdict)
    try:
        await _tell(services, record, note, once=f"decided:{record.id}")
    except StorageError as exc:  # unclaimed, it might be told twice: left untold, said so
        log.error("interrupt %s: its requester was not told of the decision: %s", record.id, exc)


async def tell_batch_decided(services: Services, batch: Batch) -> None:
    """A batch card's items were decided: one note with how many came to what, posted by
    one caller only, however many decided its last items at once. Not while an item is
    damaged: what became of it is not known."""
    if batch.damaged:
        return
    items = batch.records
    counts: dict[str, int] = {}
    for record in items:
        what = item_outcome(record)
        if what is None:
            return  # some still wait: told once all are decided
        counts[what] = counts.get(what, 0) + 1
    lead_id = items[0].batch or items[0].id
    action = code_span(card_from_record(items[0]).action, 200)
    summary = ", ".join(f"{n} {what.lower()}" for what, n in counts.items())
    note = f":ballot_box_with_check: {len(items)} calls of {action} decided: {summary}"
    try:  # another process deciding (or expiring) its last items too posts nothing
        await _tell(services, items[0], note, once=f"batch:{lead_id}")
    except StorageError as exc:  # unclaimed, it might be posted twice: left unposted, said so
        log.error('batch %s: its "calls decided" note was not posted: %s', lead_id, exc)


async def tell_escalated(services: Services, record: InterruptRecord) -> None:
    """The request was not decided in time and went to the escalation's approvers (or
    why its card is not in front of them yet)."""
    where = escalated_to(record)
    if where is not None:
        action = code_span(card_from_record(record).action, 200)
        text = f":arrow_up: {where}: {action}"
        if record.escalation_unposted and record.escalation_error:
            text = f":arrow_up: {action} was not decided in time. {where}."
        await _tell(services, record, text)


async def tell_finished(
    services: Services,
    *,
    requested_by: str,
    asked_in: str | None,
    channel: str | None,
    thread_ts: str | None,
    text: str,
) -> None:
    """Tell the requester how the run ended when they asked outside its thread (in the
    thread the end is posted with their mention)."""
    if not is_user_id(requested_by) or not asked_in or asked_in == channel:
        return
    link = await permalink(services, channel, thread_ts) if channel and thread_ts else None
    opening = f" <{link}|Open>" if link else ""
    await post_direct(services, requested_by, f"{escape_truncate(text, 2000)}{opening}")


def mention_in_thread(requested_by: str, asked_in: str | None, channel: str | None) -> str:
    """The requester's mention for a post in the run's thread, when they asked there."""
    if is_user_id(requested_by) and (asked_in is None or asked_in == channel):
        return user_mention(requested_by)
    return ""


async def _tell(
    services: Services, record: InterruptRecord, note: str, *, once: str | None = None
) -> None:
    """Tell the requester ``note`` in the request's thread (or by DM when they asked
    elsewhere); with ``once``, only the first caller naming it does (``post_once``)."""
    requester = record.requested_by
    if not is_user_id(requester) or not record.channel:
        return
    if record.asked_in is None or record.asked_in == record.channel:
        channel, thread, or_tell = record.channel, record.thread_ts or record.message_ts, requester
        text = f"{user_mention(requester)} {note}"  # or_tell: the app was not in that channel
    else:
        link = f" <{record.permalink}|Open>" if record.permalink else ""
        direct = await direct_channel(services, requester)
        if direct is None:
            return
        channel, thread, or_tell, text = direct, None, None, f"{note}{link}"
    if once is None:
        await post_mrkdwn(services, channel=channel, thread_ts=thread, text=text, or_tell=or_tell)
    else:
        await post_once(
            services, once, channel=channel, thread_ts=thread, text=text, or_tell=or_tell
        )
