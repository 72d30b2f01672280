"""conversations.history and conversations.replies: what the app reads back of a channel,
newest first (a thread oldest first), with the apps' message metadata when asked."""

from __future__ import annotations

from ..entities import Channel, JsonObject, Message
from ..errors import SlackApiFailure
from . import args
from .context import ApiContext


def conversations_history(ctx: ApiContext, a: args.ConversationsHistory) -> JsonObject:
    channel = _readable_channel(ctx, a.channel)
    messages = list(reversed(ctx.workspace.history(channel.id)))
    return _page(ctx, messages, a)


def conversations_replies(ctx: ApiContext, a: args.ConversationsReplies) -> JsonObject:
    channel = _readable_channel(ctx, a.channel)
    thread = ctx.workspace.replies(channel.id, a.ts)
    if not thread:
        raise SlackApiFailure("thread_not_found")
    return _page(ctx, thread, a)


def _readable_channel(ctx: ApiContext, ref: str) -> Channel:
    channel = ctx.workspace.resolve_channel(ref)
    if channel is None:
        raise SlackApiFailure("channel_not_found")
    if ctx.workspace.app.bot_user_id not in channel.members:
        raise SlackApiFailure("not_in_channel")
    return channel


def _page(ctx: ApiContext, messages: list[Message], a: args.ConversationsHistory) -> JsonObject:
    """One page of ``messages`` after ``oldest``, by an opaque cursor, as Slack pages them."""
    if a.oldest:
        messages = [m for m in messages if float(m.ts) > float(a.oldest)]
    start, size = int(a.cursor or 0), max(1, min(a.limit, 999))
    more = start + size < len(messages)
    shown = []
    for message in messages[start : start + size]:
        out = ctx.workspace.to_slack(message)
        if a.include_all_metadata and message.metadata is not None:
            out["metadata"] = message.metadata
        shown.append(out)
    cursor = str(start + size) if more else ""
    return {"messages": shown, "has_more": more, "response_metadata": {"next_cursor": cursor}}
