"""The workspace's state: members, channels, messages, ephemerals, modals and Home tabs.

Every change bumps `version` and wakes waiters, so the page (long polling) and tests
(`wait_for`) see new state without sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TypeVar
from zoneinfo import ZoneInfo

from .config import AppSeed, UserSeed, WorkspaceSeed, check_seed
from .entities import Channel, Ephemeral, JsonObject, Message, Notice, User, UserGroup, View
from .errors import UserActionError
from .ids import Ids

_T = TypeVar("_T")
_RECHECK_SECONDS = 0.02


def _user(seed: UserSeed, team_id: str) -> User:
    now = datetime.now(ZoneInfo(seed.tz))
    offset = now.utcoffset()
    return User(
        id=seed.id,
        team_id=team_id,
        name=seed.name,
        real_name=seed.real_name,
        tz=seed.tz,
        tz_label=seed.tz_label or now.tzname() or seed.tz,
        tz_offset=int(offset.total_seconds()) if offset else 0,
    )


def _bot_user(app: AppSeed, team_id: str) -> User:
    return User(
        id=app.bot_user_id,
        team_id=team_id,
        name=app.bot_name,
        real_name=app.bot_name,
        tz="UTC",
        tz_label="Coordinated Universal Time",
        tz_offset=0,
        is_bot=True,
        bot_id=app.bot_id,
    )


class Workspace:
    """One team with one installed app; the single source of truth for every view of it."""

    def __init__(self, seed: WorkspaceSeed, *, ids: Ids) -> None:
        check_seed(seed)
        self.ids = ids
        self.team_id = seed.team_id
        self.team_domain = seed.team_domain
        self.team_name = seed.team_name
        self.app = seed.app
        self.users: dict[str, User] = {u.id: _user(u, seed.team_id) for u in seed.users}
        self.users[seed.app.bot_user_id] = _bot_user(seed.app, seed.team_id)
        self.groups = {
            g.id: UserGroup(id=g.id, handle=g.handle, name=g.name, users=g.users)
            for g in seed.groups
        }
        self.channels: dict[str, Channel] = {}
        for c in seed.channels:
            members = set(c.members) | ({seed.app.bot_user_id} if c.bot_member else set())
            self.channels[c.id] = Channel(id=c.id, name=c.name, members=frozenset(members))
        self._messages: dict[str, dict[str, Message]] = {cid: {} for cid in self.channels}
        self._ephemerals: list[Ephemeral] = []
        self._modals: dict[str, list[View]] = {}
        self._homes: dict[str, View] = {}
        self._notices: list[Notice] = []
        self.version = 0
        self._changed = asyncio.Event()

    # -- change notification -------------------------------------------------

    def touch(self) -> None:
        """Record a change and wake everyone waiting for one."""
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, probe: Callable[[], _T | None], *, within: float = 5.0) -> _T:
        """Wait until `probe()` returns something truthy, re-checking on every change."""
        async with asyncio.timeout(within):
            while True:
                event = self._changed
                result = probe()
                if result:
                    return result
                # Also re-check now and then: probes may watch things outside the workspace.
                # asyncio.wait, not wait_for: on 3.11 wait_for's timeout can swallow a
                # cancellation, leaving a cancelled waiter (a saver, a long poll) looping.
                changed = asyncio.ensure_future(event.wait())
                try:
                    await asyncio.wait({changed}, timeout=_RECHECK_SECONDS)
                finally:
                    changed.cancel()

    async def next_version(self, since: int, *, within: float) -> int:
        """Return once `version > since`, or after `within` seconds (long polling)."""
        with contextlib.suppress(TimeoutError):
            await self.wait_for(lambda: self.version > since, within=within)
        return self.version

    # -- lookups ---------------------------------------------------------------

    def resolve_channel(self, ref: str) -> Channel | None:
        """A channel by id, `#name` or name; a user id resolves to the bot's DM with them."""
        if ref in self.channels:
            return self.channels[ref]
        name = ref.removeprefix("#")
        for channel in self.channels.values():
            if channel.name == name and not channel.is_im:
                return channel
        if ref in self.users and not self.users[ref].is_bot:
            return self.open_dm(ref)
        return None

    def add_bot(self, channel_id: str) -> bool:
        """Add the app's bot user to a public channel (Slack's ``/invite @app``); False
        when it was a member already."""
        channel = self.channels[channel_id]
        bot = self.app.bot_user_id
        if bot in channel.members:
            return False
        self.channels[channel_id] = dataclasses.replace(channel, members=channel.members | {bot})
        self.touch()
        return True

    def open_dm(self, user_id: str, *, channel_id: str | None = None) -> Channel:
        """The bot's direct-message channel with `user_id`, created on first use (with
        `channel_id` when a saved workspace is restored)."""
        for channel in self.channels.values():
            if channel.im_user == user_id:
                return channel
        channel = Channel(
            id=channel_id or self.ids.new("D"),
            name=self.users[user_id].name,
            members=frozenset({user_id, self.app.bot_user_id}),
            im_user=user_id,
        )
        self.channels[channel.id] = channel
        self._messages[channel.id] = {}
        self.touch()
        return channel

    def open_group_dm(self, user_ids: Iterable[str], *, channel_id: str | None = None) -> Channel:
        """The group DM of `user_ids` and the bot, created on first use (with `channel_id`
        when a saved workspace is restored); named as Slack names one."""
        members = frozenset({*user_ids, self.app.bot_user_id})
        for channel in self.channels.values():
            if channel.is_mpim and channel.members == members:
                return channel
        handles = sorted(self.users[u].name for u in members)
        channel = Channel(
            id=channel_id or self.ids.new("C"),
            name="mpdm-" + "--".join(handles) + "-1",
            members=members,
            is_mpim=True,
        )
        self.channels[channel.id] = channel
        self._messages[channel.id] = {}
        self.touch()
        return channel

    def title(self, channel: Channel) -> str:
        """How the page names `channel`: a group DM by its people's names."""
        if not channel.is_mpim:
            return channel.name
        people = [self.users[u] for u in channel.members if not self.users[u].is_bot]
        return ", ".join(sorted(u.real_name or u.name for u in people))

    def channels_of(self, user_id: str) -> list[Channel]:
        """The channels and DMs `user_id` can see, public channels first."""
        visible = [c for c in self.channels.values() if user_id in c.members]
        return sorted(visible, key=lambda c: (c.is_im or c.is_mpim, c.name))

    # -- messages --------------------------------------------------------------

    def post(self, message: Message) -> Message:
        """Append a message (or thread reply) to its channel."""
        self._messages[message.channel][message.ts] = message
        self.touch()
        return message

    def message(self, channel: str, ts: str) -> Message | None:
        return self._messages.get(channel, {}).get(ts)

    def replace(self, message: Message, **changes: object) -> Message:
        """Edit a message in place (chat.update, response_url `replace_original`)."""
        updated = dataclasses.replace(message, **changes)  # type: ignore[arg-type]
        self._messages[message.channel][message.ts] = updated
        self.touch()
        return updated

    def delete(self, message: Message) -> None:
        self._messages[message.channel].pop(message.ts, None)
        self.touch()

    def all_messages(self) -> list[Message]:
        """Every message and thread reply in every channel (what a saved workspace keeps)."""
        return [m for messages in self._messages.values() for m in messages.values()]

    def history(self, channel: str) -> list[Message]:
        """Top-level messages, oldest first."""
        return [m for m in self._messages.get(channel, {}).values() if m.thread_ts is None]

    def replies(self, channel: str, thread_ts: str) -> list[Message]:
        """A thread: its parent first, then replies oldest first."""
        msgs = self._messages.get(channel, {})
        parent = [msgs[thread_ts]] if thread_ts in msgs else []
        return parent + [m for m in msgs.values() if m.thread_ts == thread_ts]

    def to_slack(self, message: Message) -> JsonObject:
        """A message as Slack shows it, with its thread's reply count when it has replies."""
        replies = self.replies(message.channel, message.ts)[1:] if not message.thread_ts else []
        latest = replies[-1].ts if replies else None
        return message.to_slack(reply_count=len(replies), latest_reply=latest)

    # -- ephemerals and notices -----------------------------------------------

    def add_ephemeral(self, ephemeral: Ephemeral) -> Ephemeral:
        self._ephemerals.append(ephemeral)
        self.touch()
        return ephemeral

    def ephemerals(self, user_id: str, channel: str) -> list[Ephemeral]:
        return [e for e in self._ephemerals if e.user == user_id and e.channel == channel]

    def replace_ephemeral(self, ephemeral: Ephemeral, **changes: object) -> None:
        index = self._ephemerals.index(ephemeral)
        self._ephemerals[index] = dataclasses.replace(ephemeral, **changes)  # type: ignore[arg-type]
        self.touch()

    def delete_ephemeral(self, ephemeral: Ephemeral) -> None:
        self._ephemerals.remove(ephemeral)
        self.touch()

    def find_ephemeral(self, ephemeral_id: str) -> Ephemeral | None:
        return next((e for e in self._ephemerals if e.id == ephemeral_id), None)

    def notify(self, user_id: str, text: str, *, channel: str | None = None) -> Notice:
        """Show the user a message from the Slack client itself (not from the app)."""
        notice = Notice(id=self.ids.new("N"), user=user_id, text=text, channel=channel)
        self._notices.append(notice)
        self.touch()
        return notice

    def notices(self, user_id: str) -> list[Notice]:
        return [n for n in self._notices if n.user == user_id]

    def dismiss(self, user_id: str, notice_id: str) -> None:
        self._notices = [n for n in self._notices if not (n.user == user_id and n.id == notice_id)]
        self.touch()

    # -- views -----------------------------------------------------------------

    def new_view(
        self,
        user_id: str,
        spec: JsonObject,
        *,
        root: str | None = None,
        previous: str | None = None,
    ) -> View:
        view_id = self.ids.new("V")
        return View(
            id=view_id,
            user=user_id,
            type="home" if spec.get("type") == "home" else "modal",
            spec=spec,
            hash=self.ids.token(),
            team_id=self.team_id,
            app_id=self.app.app_id,
            bot_id=self.app.bot_id,
            root_view_id=root or view_id,
            previous_view_id=previous,
        )

    def open_modal(self, user_id: str, spec: JsonObject) -> View:
        """Open a modal; the stack starts afresh, as `views.open` does."""
        view = self.new_view(user_id, spec)
        self._modals[user_id] = [view]
        self.touch()
        return view

    def push_modal(self, user_id: str, spec: JsonObject) -> View:
        stack = self._modals.setdefault(user_id, [])
        root = stack[0].id if stack else None
        view = self.new_view(user_id, spec, root=root, previous=stack[-1].id if stack else None)
        stack.append(view)
        self.touch()
        return view

    def modals(self, user_id: str) -> list[View]:
        """The user's modal stack, bottom first; the last one is on screen."""
        return list(self._modals.get(user_id, []))

    def view(self, view_id: str) -> View | None:
        for stack in self._modals.values():
            for view in stack:
                if view.id == view_id:
                    return view
        return next((v for v in self._homes.values() if v.id == view_id), None)

    def view_by_external_id(self, external_id: str) -> View | None:
        views: Iterable[View] = [v for s in self._modals.values() for v in s]
        return next((v for v in views if v.spec.get("external_id") == external_id), None)

    def update_view(
        self, view: View, *, spec: JsonObject | None = None, errors: dict[str, str] | None = None
    ) -> View:
        """Replace a view's content (new hash) or set its field errors."""
        changes: dict[str, object] = {"errors": errors or {}}
        if spec is not None:
            changes.update(spec=spec, hash=self.ids.token())
        updated = dataclasses.replace(view, **changes)  # type: ignore[arg-type]
        if view.type == "home":
            self._homes[view.user] = updated
        else:
            stack = self._modals[view.user]
            stack[stack.index(view)] = updated
        self.touch()
        return updated

    def close_modal(self, view: View) -> None:
        """Pop `view` and everything above it off its user's stack."""
        stack = self._modals.get(view.user, [])
        if view in stack:
            del stack[stack.index(view) :]
        self.touch()

    def clear_modals(self, user_id: str) -> None:
        self._modals.pop(user_id, None)
        self.touch()

    def publish_home(self, user_id: str, spec: JsonObject) -> View:
        """Set the user's App Home tab; it keeps its id across publishes, as in Slack."""
        current = self._homes.get(user_id)
        if current is not None:
            return self.update_view(current, spec=spec)
        view = self.new_view(user_id, spec)
        self._homes[user_id] = view
        self.touch()
        return view

    def home(self, user_id: str) -> View | None:
        return self._homes.get(user_id)

    def require_user(self, user_id: str) -> User:
        """A human user by id; scripted clients get a clear error for a typo."""
        user = self.users.get(user_id)
        if user is None or user.is_bot:
            raise UserActionError(
                f"no user {user_id!r} in the workspace; known: {sorted(self.users)}"
            )
        return user
