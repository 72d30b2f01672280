"""Undo on a card whose decision waits out its policy's undo window: the decider or any
approver takes it back before it takes effect. Storage decides atomically between the
Undo and the window's end, so exactly one of them happens; the card says which."""

from __future__ import annotations

import logging

from bot.services import Services
from bot.ui.blocks import user_mention
from bot.ui.cards import after_undo, undid_what
from bot.ui.home import refresh_homes
from bot.ui.notes import post_mrkdwn
from bot.ui.posting import post_ephemeral
from bot.ui.redraws import redraw_unconfirmed, update_message
from bot.ui.refusals import DAMAGED, STORAGE_DOWN, UNCONFIRMED, refusal_text
from storage.errors import CorruptRecordError, StorageError, StorageTimeoutError

from .damaged import record_damaged
from .payloads import Click

log = logging.getLogger(__name__)


async def undo(services: Services, click: Click) -> None:
    """Undo the held decision on the card ``click`` came from, or say why not."""
    assert click.ref is not None
    record_id = click.ref.record_id
    user, channel, thread = click.user.id, click.container.channel_id, click.thread
    try:
        outcome = await services.storage.interrupts.undo(
            record_id,
            user,
            now=services.clock.now(),
            channel=channel,
            message_ts=click.container.message_ts,
        )
    except CorruptRecordError as exc:
        await record_damaged(services, exc, record_id, user=user, channel=channel)
        await post_ephemeral(services, channel=channel, user=user, thread_ts=thread, text=DAMAGED)
        return
    except StorageTimeoutError as exc:
        log.error("undo by %s on %s not confirmed: %s", user, record_id, exc)
        await redraw_unconfirmed(services, record_id)
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=UNCONFIRMED
        )
        return
    except StorageError:
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=STORAGE_DOWN
        )
        return
    record = outcome.record
    if outcome.status == "refused" or record is None or record.undone is None:
        services.metrics.refusals[outcome.reason or "unknown"] += 1
        await post_ephemeral(
            services, channel=channel, user=user, thread_ts=thread, text=refusal_text(outcome)
        )
        return
    services.metrics.decisions["undone"] += 1
    await update_message(services, record)
    text = (
        f"{user_mention(user)} undid {undid_what(record.undone)}: "
        f"it did not take effect, and {after_undo(record)}."
    )
    await post_mrkdwn(
        services, channel=record.channel, thread_ts=record.thread_ts or record.message_ts, text=text
    )
    await refresh_homes(services, record)
