"""The record a click on a card names: read once, a damaged one reported, and refused
unless the click came from one of the record's messages. The clicker is told why not.

A field Slack holds little of carries a long record id as a short key (``bot.ui.refs``):
it names a pending record of its run only once storage lists one with that key."""

from __future__ import annotations

from bot.services import Services
from bot.ui.posting import post_ephemeral
from bot.ui.refs import is_short_ref, short_ref
from bot.ui.refusals import DAMAGED, reason_text
from storage.errors import CorruptRecordError, InvalidIdError
from storage.ids import check_id
from storage.records import InterruptRecord

from .damaged import record_damaged
from .payloads import Click


async def clicked_record(services: Services, click: Click) -> InterruptRecord | None:
    """The record ``click`` names, or None once the clicker was told why not (unknown,
    damaged, or a button of another message)."""
    ref = click.ref
    assert ref is not None
    user, channel, thread = click.user.id, click.container.channel_id, click.thread
    record_id = await named_record(services, ref.record_id)
    if record_id is None:
        text = reason_text("not_pending")
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
        return None
    try:
        record = await services.storage.queries.get(record_id)
    except CorruptRecordError as exc:
        await record_damaged(services, exc, record_id, user=user, channel=channel)
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=DAMAGED)
        return None
    if record is None or not from_its_message(record, channel, click.container.message_ts):
        text = reason_text("wrong_message" if record else "unknown")
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=text)
        return None
    return record


def from_its_message(record: InterruptRecord, channel: str, message_ts: str) -> bool:
    """Whether a click came from the record's message or one of its escalation cards (or,
    in the instant before the post is recorded, from its channel)."""
    escalation_cards = {(record.escalation_channel, record.escalation_ts)}
    if (channel, message_ts) in escalation_cards.union(record.escalation_cards):
        return True
    if record.channel != channel:
        return False
    return record.message_ts is None or record.message_ts == message_ts


async def named_record(services: Services, ref: str) -> str | None:
    """The record id ``ref`` names: itself, or for a short key the id of its run's pending
    record with that key; None when the run has none pending (decided since, or unknown).
    StorageError when storage cannot list them."""
    if not is_short_ref(ref):
        return ref
    try:
        run_id = check_id("run", ref.partition("/")[0])
    except InvalidIdError:
        return None
    pending = await services.storage.queries.pending_for_run(run_id)
    return next((r.id for r in pending if short_ref(r.id) == ref), None)
