"""views.open, views.push, views.update and views.publish."""

from __future__ import annotations

from ..blocks import checked_view
from ..entities import JsonObject, View
from ..errors import SlackApiFailure
from . import args
from .context import ApiContext


def _modal(raw: JsonObject) -> JsonObject:
    view = checked_view(raw)
    if view["type"] != "modal":
        raise SlackApiFailure("invalid_arguments")
    return view


def _trigger_user(ctx: ApiContext, a: args.ViewsOpen) -> str:
    pointer = a.trigger_id or a.interactivity_pointer
    if not pointer:
        raise SlackApiFailure("invalid_arguments")
    return ctx.triggers.redeem(pointer)


def open_view(ctx: ApiContext, a: args.ViewsOpen) -> JsonObject:
    view = _modal(a.view)
    return {"view": ctx.workspace.open_modal(_trigger_user(ctx, a), view).to_slack()}


def push_view(ctx: ApiContext, a: args.ViewsOpen) -> JsonObject:
    view = _modal(a.view)
    user = _trigger_user(ctx, a)
    if not ctx.workspace.modals(user):
        raise SlackApiFailure("not_found")
    return {"view": ctx.workspace.push_modal(user, view).to_slack()}


def _check_hash(view: View, expected: str | None) -> None:
    if expected and expected != view.hash:
        raise SlackApiFailure("hash_conflict")


def update_view(ctx: ApiContext, a: args.ViewsUpdate) -> JsonObject:
    ws = ctx.workspace
    if a.view_id:
        current = ws.view(a.view_id)
    elif a.external_id:
        current = ws.view_by_external_id(a.external_id)
    else:
        raise SlackApiFailure("invalid_arguments")
    if current is None:
        raise SlackApiFailure("not_found")
    _check_hash(current, a.hash)
    spec = checked_view(a.view)
    if spec["type"] != current.type:
        raise SlackApiFailure("invalid_arguments")
    return {"view": ws.update_view(current, spec=spec).to_slack()}


def publish(ctx: ApiContext, a: args.ViewsPublish) -> JsonObject:
    ws = ctx.workspace
    user = ws.users.get(a.user_id)
    if user is None or user.is_bot:
        raise SlackApiFailure("user_not_found")
    spec = checked_view(a.view)
    if spec["type"] != "home":
        raise SlackApiFailure("invalid_arguments")
    current = ws.home(a.user_id)
    if current is not None:
        _check_hash(current, a.hash)
    return {"view": ws.publish_home(a.user_id, spec).to_slack()}
