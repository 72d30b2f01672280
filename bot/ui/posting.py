"""Posting interrupts (and their escalation steps' cards) to Slack, and recording where.

An interrupt is stored (and in the outbox) before it is posted; a post that fails leaves
it there for the scheduler to post again, so nothing is dropped while Slack is away. One
poster at a time: while a post is under way its outbox lease is renewed, and a rate
limit longer than the client sleeps out puts the entry back for when Slack allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from datetime import timedelta

from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.services import Services
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.sweeps import POST_LEASE

from .blocks import is_user_id, user_mention
from .card_forms import card_forms, send_fitting, single_forms
from .found_cards import card_metadata, unrecorded_card
from .message import SlackMessage
from .mrkdwn import code_span
from .notes import post_direct
from .redraws import update_message
from .routing import awake_approvers
from .slack_failures import NOT_A_MEMBER, SLACK_FAILURES, passing, retry_after, why_failed

log = logging.getLogger(__name__)


async def post_interrupt(
    services: Services, record: InterruptRecord, *, again: bool = False
) -> InterruptRecord | None:
    """Post a stored interrupt and record where; None (still in the outbox) when Slack fails.
    The notification mentions the approvers inside their working hours now. ``again`` (the
    outbox): a card an earlier try posted but never recorded is recorded, not posted twice.

        A batch card is posted by its lead, and every item is recorded as posted there; the
        other items post nothing (None)."""
    if record.batch is not None and record.batch != record.id:
        return None
    team_url = await services.directory.team_url()  # asked once, never between post and mark
    if (unrecorded := services.unrecorded_posts.get(record.id)) is not None:
        return await _mark_posted(services, record, team_url, *unrecorded)
    try:
        channel = record.channel or await _dm_channel(services, record)
        found = None
        if again:
            found = await unrecorded_card(
                services, record, channel=channel, thread_ts=record.thread_ts
            )
        where, ts = (channel, found) if found else await _post_card(services, record, channel)
    except SLACK_FAILURES as exc:
        log.warning(
            "interrupt %s not posted yet, left in the outbox: %s", record.id, why_failed(exc)
        )
        first = False
        with contextlib.suppress(StorageError):  # Redis down too: the outbox waits for it
            first = await services.storage.interrupts.post_failed(record.id, why_failed(exc))
        if first and not passing(exc):
            await _tell_refused(services, record, why_failed(exc))
        wait = retry_after(exc)
        if wait is not None:
            until = services.clock.now() + timedelta(seconds=wait)
            with contextlib.suppress(StorageError):
                await services.storage.interrupts.hold_post(record.id, until=until)
        return None
    return await _mark_posted(services, record, team_url, where, ts)


async def _post_card(services: Services, record: InterruptRecord, channel: str) -> tuple[str, str]:
    """Post ``record``'s card (its record id in the message's metadata); where it went."""
    forms = await card_forms(services, record)
    awake = " ".join(user_mention(u) for u in await awake_approvers(services, record))

    def post(shown: SlackMessage) -> Awaitable[AsyncSlackResponse]:
        sent = services.client.chat_postMessage(
            channel=channel,
            text=f"{shown.text} {awake}".strip(),
            blocks=shown.blocks,
            thread_ts=record.thread_ts,
            unfurl_links=False,
            unfurl_media=False,
            metadata=card_metadata(record.id),
        )
        return _holding_outbox(services, record.id, sent)

    answer = await send_fitting(record, forms, post)
    return str(answer.get("channel") or channel), str(answer["ts"])


async def _mark_posted(
    services: Services, record: InterruptRecord, team_url: str | None, where: str, ts: str
) -> InterruptRecord | None:
    """Record that ``record``'s card is the message ``ts`` in ``where`` (and its link). Were
    Redis to fail, the card is remembered, so the outbox's next try records it."""
    thread_ts = record.thread_ts or ts
    link = message_link(team_url, where, ts, thread_ts=thread_ts) if team_url else None
    try:
        marked = await asyncio.gather(
            *(
                services.storage.interrupts.mark_posted(
                    rid, where, ts, thread_ts=thread_ts, permalink=link, now=services.clock.now()
                )
                for rid in record.batch_items or (record.id,)
            )
        )
    except StorageError:
        services.unrecorded_posts[record.id] = (where, ts)
        raise
    services.unrecorded_posts.pop(record.id, None)
    posted = marked[0]
    if posted is None or posted.channel is None:
        return posted
    if any(m is not None and (m.state != "pending" or m.held is not None) for m in marked):
        await update_message(services, posted)  # decided while its post was on its way
    if posted.permalink is not None:
        return posted
    link = await permalink(services, posted.channel, ts)
    if link is None:
        return posted
    for rid in record.batch_items or (record.id,):
        await services.storage.interrupts.set_permalink(rid, link)
    return posted.model_copy(update={"permalink": link})


async def _tell_refused(services: Services, record: InterruptRecord, why: str) -> None:
    """Tell the requester, once, that Slack refused the card: it waits in the outbox, and
    nobody would know (the app not invited to the channel, most often: then they are told
    how to invite it)."""
    if not is_user_id(record.requested_by):
        return  # a job: its requests API view says why (not_posted)
    where = f"<#{record.channel}>" if record.channel else "a direct message to its approvers"
    not_a_member = record.channel and why in NOT_A_MEMBER
    invite = " Invite the app there (`/invite @Signoff`)." if not_a_member else ""
    asked = record.runtime_interrupt
    name = code_span(asked.tool_call.name if asked.tool_call else asked.name, 200)
    text = (
        f"Your request {name} could not be posted in {where}: Slack answered `{why}`."
        f"{invite} It is posted once Slack takes it."
    )
    await post_direct(services, record.requested_by, text)


async def post_escalation(
    services: Services, record: InterruptRecord, *, again: bool = False
) -> InterruptRecord | None:
    """Post the card of the escalation step an interrupt reached, in that step's channel
    (or the run's thread), and keep where; the updated record: posted, or with what Slack
    answered when it did not take the card (the outbox tries again); None when storage
    failed. Its notification mentions the people the step names. ``again`` (the outbox):
    a card an earlier try posted but never recorded is recorded instead."""
    reached = record.reached_rungs
    if not reached:
        return None
    rung = reached[-1]
    channel = rung.channel or record.channel
    if not channel:
        return None
    thread = record.thread_ts if channel == record.channel else None
    forms = single_forms(services, record)
    who = " ".join(user_mention(u) for u in record.awaited(rung.deciders)[:20])
    text = f"Escalated, not decided in time: {forms.full.text} {who}".strip()

    def post(shown: SlackMessage) -> Awaitable[AsyncSlackResponse]:
        sent = services.client.chat_postMessage(
            channel=channel,
            thread_ts=thread,
            text=text,
            blocks=shown.blocks,
            unfurl_links=False,
            unfurl_media=False,
            metadata=card_metadata(record.id, step=len(reached)),
        )
        # The step waits in the outbox (put there as it was taken): held while posting.
        return _holding_outbox(services, record.id, sent)

    step = f"{record.id} step {len(reached)}"
    if (unrecorded := services.unrecorded_posts.get(step)) is not None:
        where, ts = unrecorded
    else:
        try:
            found = None
            if again:
                found = await unrecorded_card(
                    services, record, channel=channel, thread_ts=thread, step=len(reached)
                )
            if found is not None:
                where, ts = channel, found
            else:
                answer = await send_fitting(record, forms, post)
                where, ts = str(answer.get("channel") or channel), str(answer["ts"])
        except SLACK_FAILURES as exc:
            why = why_failed(exc)
            log.warning(
                "interrupt %s: escalation card not posted yet, left in the outbox: %s",
                record.id,
                why,
            )
            now, wait = services.clock.now(), timedelta(seconds=retry_after(exc) or 0)
            with contextlib.suppress(StorageError):  # Redis down too: the sweep cannot run either
                await services.storage.interrupts.escalation_post_failed(
                    record.id, why, step=len(reached), now=now
                )
                await services.storage.interrupts.repost_escalation(
                    record.id, at=now + max(wait, POST_LEASE)
                )
            return record.model_copy(update={"escalation_error": why[:200]})
    try:
        if not await services.storage.interrupts.set_escalation_message(
            record.id, where, ts, step=len(reached), now=services.clock.now()
        ):
            return None
    except StorageError as exc:
        log.error("interrupt %s: escalation card not recorded: %s", record.id, exc)
        services.unrecorded_posts[step] = (where, ts)  # recorded, not posted, next time
        return None
    services.unrecorded_posts.pop(step, None)
    earlier = record.escalation_cards
    if record.escalation_channel and record.escalation_ts:
        earlier = (*earlier, (record.escalation_channel, record.escalation_ts))
    update = {
        "escalation_channel": where,
        "escalation_ts": ts,
        "escalation_cards": earlier,
        "escalation_posted": max(record.escalation_posted, len(reached)),
        "escalation_error": None,
    }
    return record.model_copy(update=update)


async def post_ephemeral(
    services: Services, *, channel: str, user: str, text: str, thread_ts: str | None = None
) -> None:
    """Tell one user something only they see (``text`` is the bot's own mrkdwn), in the
    thread ``thread_ts`` when they are reading one."""
    try:
        await services.client.chat_postEphemeral(
            channel=channel, user=user, text=text, thread_ts=thread_ts
        )
    except SLACK_FAILURES as exc:
        log.warning("ephemeral to %s in %s failed: %s", user, channel, why_failed(exc))


def message_link(team_url: str, channel: str, ts: str, *, thread_ts: str) -> str:
    """A message's permalink as Slack shapes it, from the workspace's URL: the same link
    ``chat.getPermalink`` answers, without a call between posting a card and recording it."""
    link = f"{team_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts != ts:  # a reply in a thread
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link


async def permalink(services: Services, channel: str, ts: str) -> str | None:
    """The message's link as Slack gives it (``chat.getPermalink``); None if it will not."""
    try:
        answer = await services.client.chat_getPermalink(channel=channel, message_ts=ts)
    except SLACK_FAILURES as exc:
        log.warning("no permalink for %s/%s: %s", channel, ts, why_failed(exc))
        return None
    return str(answer.get("permalink") or "") or None


async def _dm_channel(services: Services, record: InterruptRecord) -> str:
    """The (group) DM with every approver; a policy names at most MAX_DM_USERS of them."""
    users = ",".join(record.policy.allowed_users)
    answer = await services.client.conversations_open(users=users)
    return str(answer["channel"]["id"])


async def _holding_outbox(
    services: Services, record_id: str, post: Awaitable[AsyncSlackResponse]
) -> AsyncSlackResponse:
    """Await ``post`` while renewing the record's outbox lease, so the scheduler does not
    post it a second time while this post sleeps out a rate limit or retries."""
    posted = asyncio.Event()

    async def hold() -> None:
        every = POST_LEASE.total_seconds() / 3
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(posted.wait(), every)
                return
            with contextlib.suppress(StorageError):
                until = services.clock.now() + POST_LEASE
                await services.storage.interrupts.hold_post(record_id, until=until)

    holder = asyncio.create_task(hold(), name=f"hold {record_id}")
    try:
        return await post
    finally:
        posted.set()
        await holder
