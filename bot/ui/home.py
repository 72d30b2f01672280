"""The app's Home tab: what waits for the viewer, and the trust they gave, revocable there.

It is redrawn when its viewer opens it, and after a decision on a request they could
decide (only for people who opened it lately: one ``views.publish`` each).
"""

from __future__ import annotations

import logging

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError

from bot.services import Services
from storage.errors import StorageError
from storage.records import InterruptRecord

from .blocks import section
from .listing import HOME_PAGE_SIZE, MAX_OPEN, channel_blocks, pending_blocks, trust_blocks
from .slack_failures import why_failed

log = logging.getLogger(__name__)

MAX_REFRESHED = 50
"""Home tabs redrawn after one decision, at most (the approvers named first)."""
MAX_CHANNELS = 20
"""Channels with pending requests looked in for those open to everyone in them."""


async def publish_home(
    services: Services, user: str, *, cursor: str | None = None, notice: str | None = None
) -> None:
    """Show ``user`` what waits for them (from ``cursor`` on, each decidable right there) and
    the trust they gave (an admin sees everyone's); ``notice`` (the bot's mrkdwn) on top."""
    now = services.clock.now()
    queries = services.storage.queries
    page = await queries.pending_for_user(user, limit=HOME_PAGE_SIZE, cursor=cursor)
    grants = [
        g
        for g in await services.storage.trust.active(now)
        if g.granted_by == user or user in services.admins
    ]
    blocks = pending_blocks(page.records, viewer=user, next_page=page.next_cursor, decide_here=True)
    open_to_all = await _open_in_channels_of(services, user)
    blocks = [
        *([section(notice)] if notice else []),
        *blocks,
        *channel_blocks(open_to_all),
        *trust_blocks(grants),
    ]
    await services.client.views_publish(user_id=user, view={"type": "home", "blocks": blocks})


async def _open_in_channels_of(services: Services, user: str) -> list[InterruptRecord]:
    """Pending requests anyone in a channel may decide, in the channels ``user`` is in,
    until ``MAX_OPEN`` cards (a batch's items are one); they are decided on their card,
    where being in the channel is what counts."""
    found: list[InterruptRecord] = []
    channels = await services.storage.queries.channels_with_pending(
        await services.directory.channels_of(user)
    )
    for channel in channels[:MAX_CHANNELS]:
        page = await services.storage.queries.pending_for_channel(channel, limit=MAX_OPEN)
        found += [r for r in page.records if r.policy.open_to_channel]
        if len({r.batch or r.id for r in found}) >= MAX_OPEN:
            break
    return found


async def refresh_homes(services: Services, record: InterruptRecord) -> None:
    """Redraw the Home of the people who could decide ``record`` (and whoever did), when
    they opened it lately: the request leaves their list."""
    policy = record.policy
    named = policy.deciders
    named += tuple(u for rung in record.reached_rungs for u in rung.deciders)
    users = [*((record.decided_by,) if record.decided_by else ()), *named][:MAX_REFRESHED]
    try:
        viewers = await services.storage.home.recent(users, services.clock.now())
    except StorageError as exc:
        log.warning("Home tabs not redrawn after %s: %s", record.id, exc)
        return
    for user in viewers:
        try:
            await publish_home(services, user)
        except (StorageError, SlackApiError, ClientError, TimeoutError, OSError) as exc:
            log.warning("Home of %s not redrawn after %s: %s", user, record.id, why_failed(exc))
