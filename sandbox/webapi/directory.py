"""auth.test, users.info, users.conversations, usergroups.list, usergroups.users.list,
conversations.open, apps.connections.open."""

from __future__ import annotations

from ..entities import JsonObject
from ..errors import SlackApiFailure
from . import args
from .context import ApiContext


def auth_test(ctx: ApiContext, _: args.NoArgs) -> JsonObject:
    ws = ctx.workspace
    return {
        "url": f"{ctx.origin}/",  # the workspace's address: its message links open here
        "team": ws.team_name,
        "user": ws.app.bot_name,
        "team_id": ws.team_id,
        "user_id": ws.app.bot_user_id,
        "bot_id": ws.app.bot_id,
        "is_enterprise_install": False,
    }


def users_info(ctx: ApiContext, a: args.UsersInfo) -> JsonObject:
    user = ctx.workspace.users.get(a.user)
    if user is None:
        raise SlackApiFailure("user_not_found")
    return {"user": user.to_slack()}


def usergroups_list(ctx: ApiContext, a: args.NoArgs) -> JsonObject:
    """The workspace's user groups, in Slack's shape (without their members)."""
    groups = [
        {"id": g.id, "handle": g.handle, "name": g.name, "user_count": len(g.users)}
        for g in ctx.workspace.groups.values()
    ]
    return {"usergroups": groups}


def usergroup_users(ctx: ApiContext, a: args.UsergroupUsers) -> JsonObject:
    group = ctx.workspace.groups.get(a.usergroup)
    if group is None:
        raise SlackApiFailure("no_such_subteam")
    return {"users": list(group.users)}


def users_conversations(ctx: ApiContext, a: args.UsersConversations) -> JsonObject:
    """The channels ``user`` is a member of (the sandbox's are all public), one page."""
    ws = ctx.workspace
    if a.user not in ws.users:
        raise SlackApiFailure("user_not_found")
    channels = [
        {"id": c.id, "name": c.name, "is_channel": True, "is_private": False}
        for c in sorted(ws.channels.values(), key=lambda c: c.id)
        if c.im_user is None and a.user in c.members
    ]
    return {"channels": channels[: max(1, a.limit)], "response_metadata": {"next_cursor": ""}}


def conversations_open(ctx: ApiContext, a: args.ConversationsOpen) -> JsonObject:
    ws = ctx.workspace
    if a.channel:
        channel = ws.channels.get(a.channel)
        if channel is None:
            raise SlackApiFailure("channel_not_found")
        return {"channel": {"id": channel.id}}
    users = list(dict.fromkeys(u for u in (a.users or "").split(",") if u))
    if not users:
        raise SlackApiFailure("users_list_not_supplied")
    if len(users) > 8:
        raise SlackApiFailure("too_many_users")
    for user_id in users:
        if user_id not in ws.users or ws.users[user_id].is_bot:
            raise SlackApiFailure("user_not_found")
    if len(users) > 1:
        return {"channel": ws.open_group_dm(users).to_slack()}
    user = ws.users[users[0]]
    existed = any(c.im_user == user.id for c in ws.channels.values())
    channel = ws.open_dm(user.id)
    out: JsonObject = {"channel": {"id": channel.id}}
    if existed:
        out.update(no_op=True, already_open=True)
    return out


def connections_open(ctx: ApiContext, _: args.NoArgs) -> JsonObject:
    return {"url": ctx.hub.issue_url(ctx.origin)}
