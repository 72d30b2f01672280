"""The record a click on a card names: read once, a damaged one reported, and refused
unless the click came from one of the record's messages. The clicker is told why not."""

from __future__ import annotations

from bot.services import Services
from bot.ui.posting import post_ephemeral
from bot.ui.refusals import DAMAGED, reason_text
from storage.errors import CorruptRecordError
from storage.records import InterruptRecord

from .damaged import record_damaged
from .payloads import Click


async def clicked_record(services: Services, click: Click) -> InterruptRecord | None:
    """The record ``click`` names, or None once the clicker was told why not (unknown,
    damaged, or a button of another message)."""
    ref = click.ref
    assert ref is not None
    user, channel, thread = click.user.id, click.container.channel_id, click.thread
    try:
        record = await services.storage.queries.get(ref.record_id)
    except CorruptRecordError as exc:
        await record_damaged(services, exc, ref.record_id, user=user, channel=channel)
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
