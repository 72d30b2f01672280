"""An idempotency key sent again must come with what was sent under it: the same client
and the same body, also when the request made under it was lost and a new one is made."""

from __future__ import annotations

from aiohttp import web

from bot.services import Services
from storage.requests import RequestMeta

from .auth import Caller
from .bodies import error


def key_refusal(caller: Caller, meta: RequestMeta, digest: str) -> web.Response | None:
    """The 409 of a key whose request (``meta``) was another client's or asked for
    another body (``digest``, ``request_digest``'s); None when the key may be used."""
    if not caller.owns(meta):  # an earlier, revoked client of the same name used the key
        problem = f"an earlier client named {caller.name!r} used this key; use another"
        return error(409, problem, "idempotency_key")
    if meta.body_sha256 not in (None, digest):
        problem = "this key was used for a request with another body; use another key"
        return error(409, problem, "idempotency_key")
    return None


async def lost_key_refusal(
    services: Services, caller: Caller, lost: str | None, digest: str
) -> web.Response | None:
    """``key_refusal`` of the lost request ``lost`` (a run id) a new one replaces, when
    its meta is still kept: the retry asks again for what it asked, or is refused."""
    meta = await services.storage.requests.meta(lost) if lost else None
    return key_refusal(caller, meta, digest) if meta else None
