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

from .listing import PAGE_SIZE, pending_blocks, trust_blocks
from .posting import why_failed

log = logging.getLogger(__name__)

MAX_REFRESHED = 50
"""Home tabs redrawn after one decision, at most (the approvers named first)."""


async def publish_home(services: Services, user: str, *, cursor: str | None = None) -> None:
    """Show ``user`` what waits for them (from ``cursor`` on) and the trust they gave (an
    admin sees everyone's)."""
    now = services.clock.now()
    page = await services.storage.queries.pending_for_user(user, limit=PAGE_SIZE, cursor=cursor)
    grants = [
        g
        for g in await services.storage.trust.active(now)
        if g.granted_by == user or user in services.admins
    ]
    blocks = pending_blocks(page.records, next_page=page.next_cursor) + trust_blocks(grants)
    await services.client.views_publish(user_id=user, view={"type": "home", "blocks": blocks})


async def refresh_homes(services: Services, record: InterruptRecord) -> None:
    """Redraw the Home of the people who could decide ``record`` (and whoever did), when
    they opened it lately: the request leaves their list."""
    policy = record.policy
    named = policy.allowed_users + policy.group_members + policy.escalate_to_users
    users = [*((record.decided_by,) if record.decided_by else ()), *named][:MAX_REFRESHED]
    try:
        viewers = await services.storage.home.recent(users, services.clock.now())
        for user in viewers:
            await publish_home(services, user)
    except (StorageError, SlackApiError, ClientError, TimeoutError, OSError) as exc:
        log.warning("Home tabs not redrawn after %s: %s", record.id, why_failed(exc))
