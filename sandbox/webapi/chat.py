"""chat.postMessage, chat.update, chat.postEphemeral and chat.getPermalink."""

from __future__ import annotations

from ..blocks import MAX_BLOCK_TEXT, block_text_length, checked_blocks
from ..entities import Channel, Ephemeral, JsonObject, Message
from ..errors import SlackApiFailure
from . import args
from .context import ApiContext

MAX_TEXT = 40_000


def _postable_channel(ctx: ApiContext, ref: str) -> Channel:
    channel = ctx.workspace.resolve_channel(ref)
    if channel is None:
        raise SlackApiFailure("channel_not_found")
    if ctx.workspace.app.bot_user_id not in channel.members:
        raise SlackApiFailure("not_in_channel")
    return channel


def _content(
    text: str | None, blocks: list[JsonObject] | None
) -> tuple[str, tuple[JsonObject, ...]]:
    if not text and not blocks:
        raise SlackApiFailure("no_text")
    if text and len(text) > MAX_TEXT:
        raise SlackApiFailure("msg_too_long")
    return text or "", _message_blocks(blocks) if blocks else ()


def _message_blocks(blocks: object) -> tuple[JsonObject, ...]:
    """A message's blocks, checked one by one and then all together, as Slack does."""
    checked = checked_blocks(blocks, surface="message")
    if block_text_length(checked) > MAX_BLOCK_TEXT:
        raise SlackApiFailure("msg_blocks_too_long")
    return checked


def post_message(ctx: ApiContext, a: args.PostMessage) -> JsonObject:
    ws = ctx.workspace
    channel = _postable_channel(ctx, a.channel)
    text, blocks = _content(a.text, a.blocks)
    thread_ts = None
    if a.thread_ts:
        parent = ws.message(channel.id, a.thread_ts)
        if parent is None:
            raise SlackApiFailure("thread_not_found")
        thread_ts = parent.thread_ts or parent.ts  # a reply to a reply joins the same thread
    if a.metadata is not None and not isinstance(a.metadata.get("event_type"), str):
        raise SlackApiFailure("invalid_metadata_format")
    app = ws.app
    message = ws.post(
        Message(
            channel=channel.id,
            ts=ws.ids.ts(),
            user=app.bot_user_id,
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            bot_id=app.bot_id,
            app_id=app.app_id,
            team=ws.team_id,
            metadata=a.metadata,
        )
    )
    return {"channel": channel.id, "ts": message.ts, "message": message.to_slack()}


def update(ctx: ApiContext, a: args.Update) -> JsonObject:
    ws = ctx.workspace
    channel = ws.resolve_channel(a.channel)
    if channel is None:
        raise SlackApiFailure("channel_not_found")
    message = ws.message(channel.id, a.ts)
    if message is None:
        raise SlackApiFailure("message_not_found")
    if message.user != ws.app.bot_user_id:
        raise SlackApiFailure("cant_update_message")
    if a.text is None and a.blocks is None:
        raise SlackApiFailure("no_text")
    text = message.text if a.text is None else a.text
    if len(text) > MAX_TEXT:
        raise SlackApiFailure("msg_too_long")
    # Omitted blocks are kept; an empty list removes them (Slack's rule).
    blocks = message.blocks if a.blocks is None else _message_blocks(a.blocks)
    updated = ws.replace(message, text=text, blocks=blocks, edited_ts=ws.ids.ts())
    return {
        "channel": channel.id,
        "ts": updated.ts,
        "text": updated.text,
        "message": ws.to_slack(updated),
    }


def post_ephemeral(ctx: ApiContext, a: args.PostEphemeral) -> JsonObject:
    ws = ctx.workspace
    channel = _postable_channel(ctx, a.channel)
    if a.user not in ws.users:
        raise SlackApiFailure("user_not_found")
    if a.user not in channel.members:
        raise SlackApiFailure("user_not_in_channel")
    text, blocks = _content(a.text, a.blocks)
    ephemeral = ws.add_ephemeral(
        Ephemeral(
            id=ws.ids.ts(),
            channel=channel.id,
            user=a.user,
            text=text,
            blocks=blocks,
            thread_ts=a.thread_ts,
            sender=ws.app.bot_user_id,
        )
    )
    return {"message_ts": ephemeral.id}


def get_permalink(ctx: ApiContext, a: args.GetPermalink) -> JsonObject:
    """A link in Slack's shape (``/archives/<channel>/p<ts digits>``) that opens the page."""
    channel = ctx.workspace.resolve_channel(a.channel)
    if channel is None:
        raise SlackApiFailure("channel_not_found")
    if ctx.workspace.message(channel.id, a.message_ts) is None:
        raise SlackApiFailure("message_not_found")
    digits = a.message_ts.replace(".", "")
    return {"channel": channel.id, "permalink": f"{ctx.origin}/archives/{channel.id}/p{digits}"}
