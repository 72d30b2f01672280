"""Notes in a run's thread or a channel (progress, how a run ended, a decision, an expiry).
One Slack did not take for a passing reason is queued, and the scheduler
posts it when Slack answers again, as the outbox does for cards."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
import time
from collections.abc import Awaitable, Sequence
from datetime import datetime, timedelta

from bot.services import Services
from storage.epoch import to_ms
from storage.errors import StorageError
from storage.notes import NOTE_KEPT, LeasedNote, Note
from storage.sweeps import POST_LEASE

from .holding import held_while
from .mrkdwn import escape_truncate
from .slack_failures import SLACK_FAILURES, passing, retry_after, why_failed

log = logging.getLogger(__name__)

_THREAD_TEXT = 3000


async def post_in_thread(
    services: Services,
    *,
    channel: str | None,
    thread_ts: str | None,
    text: str,
    mention: str = "",
    or_tell: str | None = None,
) -> None:
    """Post untrusted ``text`` (escaped) in the run's thread, or the channel without one;
    ``mention`` (the bot's own mrkdwn) is added on a line of its own. ``or_tell``: as
    ``post_mrkdwn``."""
    if not channel:
        log.info("no channel for run progress: %s", text[:200])
        return
    escaped = escape_truncate(text, _THREAD_TEXT) + (f"\ncc {mention}" if mention else "")
    await post_mrkdwn(services, channel=channel, thread_ts=thread_ts, text=escaped, or_tell=or_tell)


async def post_mrkdwn(
    services: Services,
    *,
    channel: str | None,
    thread_ts: str | None,
    text: str,
    or_tell: str | None = None,
) -> None:
    """Post the bot's own mrkdwn (mentions built from stored ids only); queued when Slack
    does not take it for a passing reason. One Slack refuses for good (the app is not in
    the channel) goes to the user ``or_tell`` (the requester) in a direct message."""
    if not channel:
        return
    try:
        await send_mrkdwn(services, channel, thread_ts, text)
    except SLACK_FAILURES as exc:
        log.error("note not posted in %s/%s: %s", channel, thread_ts, why_failed(exc))
        if not passing(exc) and or_tell is not None:
            await post_direct(services, or_tell, text)
        elif passing(exc):
            await _later(services, _note(services, channel, thread_ts, text, or_tell), exc)


async def post_once(
    services: Services,
    name: str,
    *,
    channel: str,
    thread_ts: str | None,
    text: str,
    or_tell: str | None = None,
) -> None:
    """Post the bot's own mrkdwn if this caller is the first to name ``name``, at least
    once: it is queued as it is claimed, so were this process to die before Slack took it,
    the scheduler posts it. Storage's failure to claim it is the caller's to handle."""
    note = _note(services, channel, thread_ts, text, or_tell)
    now = services.clock.now()
    leased = await services.storage.notes.once(name, note, now=now, lease=POST_LEASE)
    if leased is not None:
        await _send(services, leased)


async def post_direct(services: Services, user: str, text: str) -> None:
    """Tell ``user`` something (the bot's own mrkdwn) in a direct message."""
    channel = await direct_channel(services, user)
    if channel is not None:
        await post_mrkdwn(services, channel=channel, thread_ts=None, text=text)


async def direct_channel(services: Services, user: str) -> str | None:
    """The direct message channel with ``user``; None (logged) when Slack does not open it."""
    try:
        opened = await services.client.conversations_open(users=user)
        return str(opened["channel"]["id"])
    except (*SLACK_FAILURES, KeyError) as exc:
        log.warning("could not open a DM with %s: %s", user, why_failed(exc))
        return None


async def send_queued_notes(services: Services) -> int:
    """Post the notes Slack did not take before, each thread's in order and threads side
    by side; the number posted."""
    threads: dict[tuple[str, str | None], list[LeasedNote]] = {}
    for leased in await services.storage.notes.claim(services.clock.now(), lease=POST_LEASE):
        threads.setdefault((leased.note.channel, leased.note.thread_ts), []).append(leased)
    posted = await asyncio.gather(*(_send_thread(services, notes) for notes in threads.values()))
    return sum(posted)


async def _send_thread(services: Services, notes: list[LeasedNote]) -> int:
    """Post one thread's claimed notes in order; the number posted. One Slack still does
    not take stays queued, and so do the later ones, which keep their order; one it
    refuses is dropped (or sent to its ``or_tell`` user instead)."""
    sent = 0
    stuck: BaseException | None = None
    held = notes[0].leased_until  # claimed in one step: one lease, held as one
    for at, claimed in enumerate(notes):
        leased = dataclasses.replace(claimed, leased_until=held)
        note = leased.note
        if stuck is not None:
            await _later(services, note, stuck, member=leased.member)
            continue
        if note.while_pending and not await _pending(services, note.while_pending):
            await services.storage.notes.done(leased)
            continue
        failed, held = await _send(services, leased, waiting=notes[at + 1 :])
        if failed is None:
            sent += 1
        elif passing(failed):
            stuck = failed
    return sent


async def _send(
    services: Services, leased: LeasedNote, *, waiting: Sequence[LeasedNote] = ()
) -> tuple[BaseException | None, datetime]:
    """Post a leased note and take it off the queue; one Slack did not take for a passing
    reason is queued again, one it refuses goes to its ``or_tell`` user. Its lease, and
    those of the thread's notes ``waiting`` on it, are held meanwhile. What failed, and
    where the leases were held to."""
    note = leased.note
    failure: BaseException | None = None

    async def posting() -> None:
        nonlocal failure
        try:
            await send_mrkdwn(services, note.channel, note.thread_ts, note.text)
        except SLACK_FAILURES as exc:
            failure = exc
            log.warning("note %s not posted: %s", note.id, why_failed(exc))
        if failure is not None and not passing(failure) and note.or_tell is not None:
            await post_direct(services, note.or_tell, note.text)

    def renew(held: datetime, until: datetime) -> Awaitable[bool]:
        return services.storage.notes.hold([leased, *waiting], held, until)

    held = await held_while(services, posting(), leased.leased_until, renew)
    if failure is not None and passing(failure):
        await _later(services, note, failure, member=leased.member)
    else:
        await _done(services, dataclasses.replace(leased, leased_until=held))
    return failure, held


async def _done(services: Services, leased: LeasedNote) -> None:
    try:
        await services.storage.notes.done(leased)
    except StorageError as exc:  # it stays queued: posted again once its lease lapses
        log.error("note %s handled, but not taken off the queue: %s", leased.note.id, exc)


def _note(
    services: Services, channel: str, thread_ts: str | None, text: str, or_tell: str | None
) -> Note:
    return Note(
        id=f"note_{time.time_ns():020d}_{secrets.token_hex(4)}",  # sorts as made
        channel=channel,
        thread_ts=thread_ts,
        text=text.encode("utf-8", "replace").decode(),  # JSON has no lone surrogates
        until_ms=to_ms(services.clock.now() + NOTE_KEPT),
        or_tell=or_tell,
    )


async def _pending(services: Services, record_id: str) -> bool:
    record = await services.storage.queries.get(record_id)
    return record is not None and record.state == "pending" and record.held is None


async def send_mrkdwn(services: Services, channel: str, thread_ts: str | None, text: str) -> None:
    """Post the bot's own mrkdwn once; Slack's failures are the caller's to handle."""
    await services.client.chat_postMessage(
        channel=channel, thread_ts=thread_ts, text=text, unfurl_links=False, unfurl_media=False
    )


async def _later(
    services: Services, note: Note, failure: BaseException, *, member: str | None = None
) -> None:
    wait = max(timedelta(seconds=retry_after(failure) or 0), POST_LEASE)
    try:
        await services.storage.notes.later(note, at=services.clock.now() + wait, member=member)
    except StorageError as exc:
        log.error("note %s not queued, so not posted: %s", note.id, exc)
        return
    log.info("note %s queued: it is posted when Slack takes it", note.id)
