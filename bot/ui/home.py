"""The app's Home tab: what waits for the viewer, and the trust they gave, revocable there.

It is redrawn when its viewer opens it (each list from its first page), and after a
decision on a request they could decide or saw open to their channel (only for people who
opened it lately: one ``views.publish`` each), each list on the page the viewer was on.
"""

from __future__ import annotations

import logging

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError

from bot.services import Services
from bot.services.directory import CHANNEL_PAGES, CHANNELS_PER_PAGE, Membership
from storage.errors import StorageError
from storage.records import InterruptRecord

from .blocks import section
from .home_place import HomePlace
from .listing import HOME_PAGE_SIZE, MAX_OPEN, Shown, channel_blocks, pending_blocks, trust_blocks
from .slack_failures import why_failed

log = logging.getLogger(__name__)

MAX_REFRESHED = 50
"""Home tabs redrawn after one decision, at most (the approvers named first)."""


async def publish_home(
    services: Services,
    user: str,
    place: HomePlace,
    *,
    stored: HomePlace | None,
    notice: str | None = None,
) -> None:
    """Show ``user`` what waits for them (each decidable right there), what anyone in their
    channels may decide, each list from ``place`` (one that got shorter on its last page),
    and the trust they gave (an admin sees everyone's); ``notice`` (the bot's mrkdwn) on
    top. The place shown is stored first unless it is ``stored`` (what storage holds)."""
    now = services.clock.now()
    queries = services.storage.queries
    page = await queries.pending_for_user(user, limit=HOME_PAGE_SIZE, cursor=place.named)
    membership = await services.directory.channels_of(user)
    # Each is decided on its card, where being in the channel is what counts.
    open_page = await queries.pending_open_in(
        membership.channels, limit=MAX_OPEN, cursor=place.open_to_channels
    )
    shown = HomePlace(named=page.after, open_to_channels=open_page.after)
    later_named = HomePlace(named=page.next_cursor, open_to_channels=shown.open_to_channels)
    later_open = HomePlace(named=shown.named, open_to_channels=open_page.next_cursor)
    grants = [
        g
        for g in await services.storage.trust.active(now)
        if g.granted_by == user or user in services.admins
    ]
    blocks = [
        *([section(notice)] if notice else []),
        *pending_blocks(
            page.records,
            viewer=user,
            now=now,
            next_page=page.next_cursor and later_named.value,
            decide_here=True,
            shown=Shown.of(page),
        ),
        *channel_blocks(
            open_page.records,
            now=now,
            shown=Shown.of(open_page),
            next_page=open_page.next_cursor and later_open.value,
            missing=_missing(membership),
        ),
        *trust_blocks(grants),
    ]
    # Before it is seen: a click on it then redraws these pages, and a decision on a
    # request listed as open to a channel of theirs redraws it, in whichever process.
    mine = set(membership.channels)
    await services.storage.home.drawn(
        user,
        now,
        place=None if shown == stored else shown.value,
        seen_in={c for r in open_page.records for c in _open_channels(r) if c in mine},
    )
    await services.client.views_publish(user_id=user, view={"type": "home", "blocks": blocks})


async def show_home(services: Services, user: str, *, notice: str | None = None) -> None:
    """Redraw ``user``'s Home on the pages they were on (as stored), ``notice`` on top."""
    kept = HomePlace.parse(await services.storage.home.place(user))
    await publish_home(services, user, kept, stored=kept, notice=notice)


def _missing(membership: Membership) -> str | None:
    """What Home says of the viewer's channels it did not look in (none: it looked in all)."""
    if membership.whole:
        return None
    if not membership.channels:
        return "Slack did not list your channels: requests open to a channel are on its card."
    looked = CHANNEL_PAGES * CHANNELS_PER_PAGE
    return f"Looked in the first {looked:,} of your channels Slack lists, not the rest."


async def refresh_homes(
    services: Services, record: InterruptRecord, *, except_for: str | None = None
) -> None:
    """Redraw the Home of the people who could decide ``record`` (and whoever did, and
    those whose Home listed requests open to its channels), when they opened it lately,
    each on the pages they were on: the request leaves their list, or says its decision
    waits out its undo window. ``except_for`` is redrawn by the caller."""
    named = record.policy.deciders
    named += tuple(u for rung in record.reached_rungs for u in rung.deciders)
    try:
        in_channel = await services.storage.home.seen_in(
            _open_channels(record), services.clock.now()
        )
    except StorageError as exc:
        log.warning("Homes listing %s in its channels not redrawn: %s", record.id, exc)
        in_channel = []
    users = [*((record.decided_by,) if record.decided_by else ()), *named, *in_channel]
    users = [user for user in dict.fromkeys(users) if user != except_for][:MAX_REFRESHED]
    await redraw_homes(services, users, after=record.id)


def _open_channels(record: InterruptRecord) -> list[str]:
    """The channels whose members may decide ``record`` on its card, as far as it reached."""
    opened = [record.channel] if record.policy.open_to_channel else []
    opened += [r.channel or record.channel for r in record.reached_rungs if r.open_to_channel]
    return [c for c in dict.fromkeys(opened) if c]


async def redraw_homes(services: Services, users: list[str], *, after: str) -> None:
    """Redraw the Home of those of ``users`` who opened it lately, each on the pages they
    were on; ``after`` (what changed) is for the log."""
    try:
        viewers = await services.storage.home.recent(users, services.clock.now())
    except StorageError as exc:
        log.warning("Home tabs not redrawn after %s: %s", after, exc)
        return
    for user, kept in viewers.items():
        try:
            place = HomePlace.parse(kept)
            await publish_home(services, user, place, stored=place)
        except (StorageError, SlackApiError, ClientError, TimeoutError, OSError) as exc:
            log.warning("Home of %s not redrawn after %s: %s", user, after, why_failed(exc))
