"""How many undecided requests one API client may have stored
(``SIGNOFF_API_PENDING_REQUESTS``): a leaked or looping token cannot fill Redis, nor post
a card, past it. Storage enforces the limit atomically as it stores a request; the check
here refuses one over it before anything is stored or asked of Slack."""

from __future__ import annotations

from aiohttp import web

from bot.services import Services
from bot.services.limits import PENDING_REQUESTS_SETTING
from storage.requests import request_record_id

from .auth import Caller
from .schemas import ApiError, NewRequest


async def over_pending_limit(
    services: Services, caller: Caller, body: NewRequest, *, run_id: str
) -> web.Response | None:
    """The 429 of a request its client has no room for, before any work; None when it
    has room, or when it is a retry (its idempotency key) of a request already made."""
    limit = services.limits.pending_requests
    records = max(1, len(body.items))
    storage = services.storage
    if await storage.requests.has_room(caller.name, run_id=run_id, records=records, limit=limit):
        return None
    if body.idempotency_key is not None and await storage.queries.get(request_record_id(run_id)):
        return None  # the same request again: answered as it stands
    return too_many_pending(caller.name, limit)


def too_many_pending(client: str, limit: int) -> web.Response:
    """The 429 of a request over ``client``'s limit, naming the limit and its setting."""
    message = (
        f"client {client!r} has {limit} requests pending (one per item for a request with "
        f"items), the most {PENDING_REQUESTS_SETTING} allows; nothing was stored: ask again "
        "once some are decided or withdrawn"
    )
    body = ApiError(error=message, limit=limit, setting=PENDING_REQUESTS_SETTING)
    return web.json_response(body.model_dump(exclude_none=True), status=429)
