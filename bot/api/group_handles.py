"""A new request's user group handles (``@oncall``) replaced by the groups' ids, and its
user ids checked against the workspace, before anything is kept."""

from __future__ import annotations

from aiohttp import web

from bot.errors import SlackUnreachableError
from bot.services import Services

from .bodies import error
from .schemas import NewRequest


async def with_group_ids(services: Services, body: NewRequest) -> NewRequest | web.Response:
    """``body`` with each user group handle (``@oncall``) replaced by the group's id."""
    update: dict[str, object] = {}
    for name in ("approvers", "escalate_to"):
        ids = await _ids(services, getattr(body, name), name)
        if isinstance(ids, web.Response):
            return ids
        update[name] = ids
    ladder = []
    for index, step in enumerate(body.ladder):
        ids = await _ids(services, step.approvers, f"ladder.{index}.approvers")
        if isinstance(ids, web.Response):
            return ids
        ladder.append(step.model_copy(update={"approvers": ids}))
    return body.model_copy(update={**update, "ladder": ladder})


async def _ids(services: Services, given: list[str], where: str) -> list[str] | web.Response:
    ids: list[str] = []
    for index, who in enumerate(given):
        try:
            found = await services.directory.group_id(who) if who[0] == "@" else who
        except SlackUnreachableError as exc:
            return error(503, f"{exc}; nothing was changed, try again", f"{where}.{index}")
        if found is None:
            problem = (
                f"no user group {who} that Signoff can see (usergroups:read); name a person "
                "by user id (U0123ABCD, in their Slack profile under More)"
            )
            return error(400, f"{where}.{index}: {problem}", f"{where}.{index}")
        account = await services.directory.account(found) if found[0] in "UW" else "active"
        if account != "active":
            problem = (
                f"Slack has no user {who} in this workspace (a typo?)"
                if account == "none"
                else f"{who} is deactivated in Slack, so cannot decide; name someone who can"
            )
            return error(400, f"{where}.{index}: {problem}", f"{where}.{index}")
        ids.append(found)
    return ids
