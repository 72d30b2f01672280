"""Who is who in the workspace: user time zones, user group members and the channels a
person is in, cached.

Both come from rate-limited Web API methods (``users.info`` tier 4,
``usergroups.users.list`` tier 2), so answers are kept for ``ttl`` and never fetched on
the click path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import SlackUnreachableError
from storage.interrupts import GROUP_CHECK_EVERY

from .clock import Clock

log = logging.getLogger(__name__)

Account = Literal["active", "deactivated", "none"]
"""What Slack says of a user id: an active account, a deactivated one, or no user."""


@dataclass(frozen=True, kw_only=True)
class SlackUser:
    """What Slack tells of a user: the time zone (the IANA name when Slack gives one, else
    the UTC offset), the name, when Slack told them, and whether the account is deactivated
    (``deleted``: Slack keeps it, but it decides nothing)."""

    user_id: str
    tz: str | None = None
    offset_seconds: int = 0
    name: str | None = None
    deleted: bool = False

    def zone(self) -> tzinfo:
        if self.tz:
            try:
                return ZoneInfo(self.tz)
            except (ZoneInfoNotFoundError, ValueError):
                pass
        return timezone(timedelta(seconds=self.offset_seconds))


@dataclass(frozen=True, kw_only=True)
class Membership:
    """The channels a user is in, as Slack listed them; ``whole`` is False when Slack had
    more than the pages asked for (only the first ``CHANNEL_PAGES`` are), or did not say."""

    channels: tuple[str, ...] = ()
    whole: bool = True


def slack_error(exc: SlackApiError) -> str:
    """Slack's error code, or the HTTP status when the answer was not Slack's JSON."""
    data = exc.response.data
    if isinstance(data, dict) and data.get("error"):
        return str(data["error"])
    return f"HTTP {exc.response.status_code}"


_ASK_AGAIN = timedelta(minutes=1)
"""How long a Slack lookup that failed is not asked again."""
_HANDLES_FRESH_FOR = timedelta(minutes=5)
_NAMES_WITHIN = timedelta(seconds=2)
"""How long an answer may wait for users' names before it goes without them."""
CHANNEL_PAGES = 5
"""Pages of a user's channels asked for (``users.conversations``: up to 200 each)."""
CHANNELS_PER_PAGE = 200


class Directory:
    """Cached lookups of user time zones, group members and group handles."""

    def __init__(
        self, client: AsyncWebClient, *, clock: Clock, ttl: timedelta = timedelta(hours=6)
    ) -> None:
        self._client = client
        self._clock = clock
        self._ttl = ttl
        self._zones: dict[str, tuple[datetime, SlackUser]] = {}
        self._groups: dict[str, tuple[datetime, tuple[str, ...] | None]] = {}
        self._empty_groups: set[str] = set()
        self._handles: tuple[datetime, dict[str, str]] | None = None
        self._channels: dict[str, tuple[datetime, Membership]] = {}
        self._team_url: str | None = None
        self._own_user_id: str | None = None
        self._team_told = False
        self._team_asked: datetime | None = None

    async def team_url(self) -> str | None:
        """The workspace's URL (``auth.test``, kept once Slack answers; while it fails,
        asked again at most once a minute); None while Slack does not tell it."""
        await self._auth_test()
        return self._team_url

    async def own_user_id(self) -> str | None:
        """The app's bot user id (``auth.test``, asked as for ``team_url``); None while
        Slack does not tell it."""
        await self._auth_test()
        return self._own_user_id

    async def _auth_test(self) -> None:
        now = self._clock.now()
        if self._team_told or (self._team_asked and now - self._team_asked < _ASK_AGAIN):
            return
        self._team_asked = now
        try:
            answer = await self._client.auth_test()
        except (SlackApiError, ClientError, TimeoutError, OSError) as exc:
            why = slack_error(exc) if isinstance(exc, SlackApiError) else repr(exc)
            log.warning("auth.test failed: %s; card links are asked one by one", why)
            return
        url, user = answer.get("url"), answer.get("user_id")
        self._team_url = url if isinstance(url, str) and "://" in url else None
        self._own_user_id = user if isinstance(user, str) and user else None
        self._team_told = True

    async def zone(self, user_id: str) -> SlackUser:
        """The user's time zone; when Slack cannot tell (logged, not raised), the one read
        before, else UTC."""
        cached = self._zones.get(user_id)
        if cached and self._clock.now() - cached[0] < self._ttl:
            return cached[1]
        found = await self._user(user_id)
        if isinstance(found, SlackUser):
            return found
        kept = "keeping the zone read before" if cached else "assuming UTC until it answers"
        log.warning("users.info failed for %s: %s; %s", user_id, found, kept)
        return cached[1] if cached else SlackUser(user_id=user_id)

    async def account(self, user_id: str) -> Account:
        """``"none"`` only when Slack says it has no such user (``user_not_found``, which
        the caller tells, so not logged), ``"deactivated"`` when it says the account is; a
        user it could not be asked about counts as ``"active"``."""
        cached = self._zones.get(user_id)
        if cached and self._clock.now() - cached[0] < self._ttl:
            return "deactivated" if cached[1].deleted else "active"
        found = await self._user(user_id)
        if found == "user_not_found":
            return "none"
        if isinstance(found, str):
            log.warning("users.info failed for %s: %s; taking it for a user", user_id, found)
            return "active"
        return "deactivated" if found.deleted else "active"

    async def _user(self, user_id: str) -> SlackUser | str:
        """What ``users.info`` tells of the user (kept for the ttl), or why it did not."""
        now = self._clock.now()
        try:
            answer = await self._client.users_info(user=user_id)
        except (SlackApiError, ClientError, TimeoutError, OSError) as exc:
            # Not kept for the ttl: a passing failure must not put someone on UTC for hours.
            return slack_error(exc) if isinstance(exc, SlackApiError) else repr(exc)
        user = answer.get("user") or {}
        zone = SlackUser(
            user_id=user_id,
            tz=user.get("tz") or None,
            offset_seconds=int(user.get("tz_offset") or 0),
            name=user.get("name") or None,
            deleted=user.get("deleted") is True,
        )
        self._zones[user_id] = (now, zone)
        return zone

    async def names(self, user_ids: Iterable[str]) -> dict[str, str]:
        """The Slack name of each of ``user_ids`` that Slack told (``users.info``, cached
        with the time zone; a user group's ``@handle``), for output read outside Slack:
        ``{"U0ALICE": "alice", "S0ONCALL": "@oncall"}``."""
        found: dict[str, str] = {}
        try:
            async with asyncio.timeout(_NAMES_WITHIN.total_seconds()):
                for user_id in dict.fromkeys(user_ids):
                    if user_id.startswith("S"):
                        handles = await self._group_handles() or {}
                        name = next((f"@{h}" for h, g in handles.items() if g == user_id), None)
                    else:
                        name = (await self.zone(user_id)).name
                    if name:
                        found[user_id] = name
        except (ClientError, TimeoutError, OSError) as exc:  # a courtesy: never worth a wait
            log.warning("users.info: Slack did not answer in time (%r); ids without names", exc)
        return found

    async def group_id(self, handle: str) -> str | None:
        """The id of the user group ``@handle`` (``usergroups.list``, asked at most every
        five minutes); None when there is none, or Slack would not list them;
        SlackUnreachableError when Slack could not be asked."""
        handles = await self._group_handles()
        if handles is None:
            raise SlackUnreachableError(f"Slack could not be reached to find the group {handle}")
        return handles.get(handle.removeprefix("@"))

    async def _group_handles(self) -> dict[str, str] | None:
        """Every user group's handle and id, as ``usergroups.list`` said at most five
        minutes ago; empty when Slack would not list them, None when it was unreachable."""
        now = self._clock.now()
        if self._handles is None or now - self._handles[0] >= _HANDLES_FRESH_FOR:
            try:
                answer = await self._client.usergroups_list()
            except SlackApiError as exc:
                if exc.response.status_code >= 500 or exc.response.status_code == 429:
                    log.error("usergroups.list: Slack is unavailable (%s)", slack_error(exc))
                    return None
                log.error("usergroups.list answered %s: check usergroups:read", slack_error(exc))
                return {}
            except (ClientError, TimeoutError, OSError) as exc:
                log.error("usergroups.list: Slack could not be reached (%r)", exc)
                return None
            groups = answer.get("usergroups") or []
            self._handles = (now, {str(g["handle"]): str(g["id"]) for g in groups})
        return self._handles[1]

    async def channels_of(self, user_id: str) -> Membership:
        """The channels ``user_id`` is in (``users.conversations``, its first five pages, kept
        five minutes); none, not whole, when Slack will not say (the app lacks
        ``channels:read``): logged, not raised."""
        now = self._clock.now()
        cached = self._channels.get(user_id)
        if cached and now - cached[0] < _HANDLES_FRESH_FOR:
            return cached[1]
        found: list[str] = []
        cursor: str | None = None  # the first page
        try:
            for _ in range(CHANNEL_PAGES):
                answer = await self._client.users_conversations(
                    user=user_id,
                    types="public_channel,private_channel",
                    limit=CHANNELS_PER_PAGE,
                    cursor=cursor,
                )
                found += [str(c["id"]) for c in answer.get("channels") or () if c.get("id")]
                cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
                if cursor is None:
                    break
        except SlackApiError as exc:
            log.warning("users.conversations answered %s: check channels:read", slack_error(exc))
            return Membership(whole=False)
        except (ClientError, TimeoutError, OSError) as exc:
            log.warning("users.conversations: Slack could not be reached (%r)", exc)
            return Membership(whole=False)
        membership = Membership(channels=tuple(found), whole=cursor is None)
        self._channels[user_id] = (now, membership)
        return membership

    async def members(self, groups: Iterable[str]) -> tuple[str, ...]:
        """The distinct members of ``groups``; a group Slack does not list counts as empty.

        A group that resolves to nobody leaves its interrupts without approvers, so it is
        logged as an error, once per group until it has members again. Lists are asked
        again once older than the scheduler's group checks would let a stored list get.
        """
        lists = await self._lists(groups, min(self._ttl, GROUP_CHECK_EVERY))
        return _distinct(users or () for users in lists)

    async def known_members(
        self, groups: Iterable[str], *, max_age: timedelta
    ) -> tuple[str, ...] | None:
        """The distinct members of ``groups`` as Slack listed them at most ``max_age`` ago;
        None when Slack did not list one of them (an error, not an empty group), so stored
        members are kept rather than emptied."""
        lists = await self._lists(groups, min(max_age, self._ttl))
        if any(users is None for users in lists):
            return None
        return _distinct(users or () for users in lists)

    async def _lists(
        self, groups: Iterable[str], fresh_for: timedelta
    ) -> list[tuple[str, ...] | None]:
        now = self._clock.now()
        lists = []
        for group in groups:
            cached = self._groups.get(group)
            if cached and now - cached[0] < fresh_for:
                users = cached[1]
            else:
                users = await self._fetch_members(group)
                self._groups[group] = (now, users)
            lists.append(users)
        return lists

    async def _fetch_members(self, group: str) -> tuple[str, ...] | None:
        """The group's members; None when Slack could not be asked or refused."""
        why, users = "it has no members", None
        try:
            answer = await self._client.usergroups_users_list(usergroup=group)
            users = tuple(str(u) for u in answer.get("users") or ())
        except SlackApiError as exc:
            why = f"usergroups.users.list answered {slack_error(exc)}"
        except (ClientError, TimeoutError, OSError) as exc:
            why = f"Slack could not be reached ({exc!r})"
        if users:
            self._empty_groups.discard(group)
        elif group not in self._empty_groups:
            self._empty_groups.add(group)
            log.error(
                "user group %s resolves to nobody (%s): its members cannot approve; check "
                "the app's usergroups:read scope and the group's members",
                group,
                why,
            )
        return users


def _distinct(lists: Iterable[Iterable[str]]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for users in lists:
        found.update(dict.fromkeys(users))
    return tuple(found)
