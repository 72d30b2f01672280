"""The workspace's domain data, and how each piece looks in Slack's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

JsonObject = dict[str, Any]
"""A JSON object as Slack sends it (Block Kit, payloads); its full schema is Slack's."""


@dataclass(frozen=True, kw_only=True)
class User:
    """A workspace member; the bot user has `is_bot=True`."""

    id: str
    team_id: str
    name: str
    real_name: str
    tz: str
    tz_label: str
    tz_offset: int
    is_bot: bool = False
    bot_id: str | None = None

    def to_slack(self) -> JsonObject:
        """The `user` object of `users.info`."""
        profile: JsonObject = {
            "real_name": self.real_name,
            "display_name": self.name,
            "real_name_normalized": self.real_name,
            "display_name_normalized": self.name,
            "team": self.team_id,
        }
        if self.bot_id:
            profile["bot_id"] = self.bot_id
        return {
            "id": self.id,
            "team_id": self.team_id,
            "name": self.name,
            "deleted": False,
            "real_name": self.real_name,
            "tz": self.tz,
            "tz_label": self.tz_label,
            "tz_offset": self.tz_offset,
            "profile": profile,
            "is_admin": False,
            "is_owner": False,
            "is_bot": self.is_bot,
            "is_app_user": False,
            "updated": 0,
        }


@dataclass(frozen=True, kw_only=True)
class UserGroup:
    """A user group such as `@oncall`."""

    id: str
    handle: str
    name: str
    users: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Channel:
    """A public channel, the bot's direct-message channel with `im_user`, or a group DM
    (`is_mpim`) of its members and the bot."""

    id: str
    name: str
    members: frozenset[str]
    im_user: str | None = None
    is_mpim: bool = False

    @property
    def is_im(self) -> bool:
        return self.im_user is not None

    def to_slack(self) -> JsonObject:
        """The `channel` object of `conversations.open` and interaction payloads."""
        if self.im_user is not None:
            return {"id": self.id, "is_im": True, "user": self.im_user}
        if self.is_mpim:
            return {"id": self.id, "name": self.name, "is_mpim": True, "is_im": False}
        return {"id": self.id, "name": self.name, "is_channel": True, "is_im": False}


@dataclass(frozen=True, kw_only=True)
class Message:
    """A message in a channel; replies carry the parent's ts in `thread_ts`."""

    channel: str
    ts: str
    user: str
    text: str
    blocks: tuple[JsonObject, ...] = ()
    thread_ts: str | None = None
    bot_id: str | None = None
    app_id: str | None = None
    team: str = ""
    edited_ts: str | None = None
    metadata: JsonObject | None = None
    """The app's `event_type` and `event_payload`, shown only to a history read asking for it."""

    def to_slack(self, *, reply_count: int = 0, latest_reply: str | None = None) -> JsonObject:
        """The `message` object Slack returns from `chat.postMessage` and echoes in payloads."""
        out: JsonObject = {"type": "message", "user": self.user, "text": self.text, "ts": self.ts}
        if self.team:
            out["team"] = self.team
        if self.bot_id:
            out["bot_id"] = self.bot_id
            out["app_id"] = self.app_id
        if self.blocks:
            out["blocks"] = list(self.blocks)
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if reply_count:
            out["thread_ts"] = self.ts
            out["reply_count"] = reply_count
            out["latest_reply"] = latest_reply
        if self.edited_ts:
            out["edited"] = {"user": self.user, "ts": self.edited_ts}
        return out


@dataclass(frozen=True, kw_only=True)
class Ephemeral:
    """A message only `user` sees ("Only visible to you"); it lives in the page, not history."""

    id: str
    channel: str
    user: str
    text: str
    blocks: tuple[JsonObject, ...] = ()
    thread_ts: str | None = None
    sender: str = ""

    def to_slack(self) -> JsonObject:
        """How the page receives it: like a message, flagged ephemeral."""
        out: JsonObject = {
            "type": "message",
            "subtype": "ephemeral",
            "ts": self.id,
            "user": self.sender,
            "text": self.text,
            "blocks": list(self.blocks),
            "is_ephemeral": True,
        }
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        return out


ViewType = Literal["modal", "home"]


@dataclass(frozen=True, kw_only=True)
class View:
    """An open modal or a published Home tab; `errors` are field errors from `response_action`."""

    id: str
    user: str
    type: ViewType
    spec: JsonObject
    hash: str
    team_id: str
    app_id: str
    bot_id: str
    root_view_id: str
    previous_view_id: str | None = None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def callback_id(self) -> str:
        return str(self.spec.get("callback_id") or "")

    @property
    def notify_on_close(self) -> bool:
        return bool(self.spec.get("notify_on_close"))

    def to_slack(self, *, state_values: JsonObject | None = None) -> JsonObject:
        """The `view` object of `views.*` responses and `view_*` payloads."""
        out: JsonObject = {
            "id": self.id,
            "team_id": self.team_id,
            "type": self.type,
            "blocks": list(self.spec.get("blocks") or []),
            "private_metadata": str(self.spec.get("private_metadata") or ""),
            "callback_id": self.callback_id,
            "state": {"values": state_values or {}},
            "hash": self.hash,
            "clear_on_close": bool(self.spec.get("clear_on_close")),
            "notify_on_close": self.notify_on_close,
            "root_view_id": self.root_view_id,
            "previous_view_id": self.previous_view_id,
            "app_id": self.app_id,
            "external_id": str(self.spec.get("external_id") or ""),
            "app_installed_team_id": self.team_id,
            "bot_id": self.bot_id,
        }
        for key in ("title", "submit", "close"):
            if key in self.spec:
                out[key] = self.spec[key]
        return out


@dataclass(frozen=True, kw_only=True)
class Notice:
    """Something the Slack client itself tells the acting user, e.g. "Operation timed out"."""

    id: str
    user: str
    text: str
    channel: str | None = None
