"""Arguments of each Web API method, validated where they enter the sandbox.

slack-sdk sends some methods as JSON and others as form fields; in forms, `blocks` and
`view` arrive as JSON strings. Both are accepted, as Slack accepts both.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from ..entities import JsonObject


class Args(BaseModel):
    """Base for method arguments: unknown arguments are ignored, as Slack ignores them."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)


def _json_if_string(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


class NoArgs(Args):
    pass


class _MessageArgs(Args):
    """What every message method takes: a channel, text and blocks (JSON in a form)."""

    channel: str
    text: str | None = None
    blocks: list[JsonObject] | None = None

    _parse_blocks = field_validator("blocks", mode="before")(_json_if_string)


class PostMessage(_MessageArgs):
    thread_ts: str | None = None
    metadata: JsonObject | None = None

    _parse_metadata = field_validator("metadata", mode="before")(_json_if_string)


class Update(_MessageArgs):
    ts: str


class GetPermalink(Args):
    channel: str
    message_ts: str


class PostEphemeral(_MessageArgs):
    user: str
    thread_ts: str | None = None


class ViewsOpen(Args):
    trigger_id: str | None = None
    interactivity_pointer: str | None = None
    view: JsonObject

    _parse_view = field_validator("view", mode="before")(_json_if_string)


class ViewsUpdate(Args):
    view: JsonObject
    view_id: str | None = None
    external_id: str | None = None
    hash: str | None = None

    _parse_view = field_validator("view", mode="before")(_json_if_string)


class ViewsPublish(Args):
    user_id: str
    view: JsonObject
    hash: str | None = None

    _parse_view = field_validator("view", mode="before")(_json_if_string)


class UsersInfo(Args):
    user: str


class UsergroupUsers(Args):
    usergroup: str


class UsersConversations(Args):
    user: str
    types: str = "public_channel"
    limit: int = 100
    cursor: str | None = None


class ConversationsOpen(Args):
    users: str | None = None
    channel: str | None = None


class ConversationsHistory(Args):
    channel: str
    oldest: str | None = None
    limit: int = 100
    cursor: str | None = None
    include_all_metadata: bool = False


class ConversationsReplies(ConversationsHistory):
    ts: str
