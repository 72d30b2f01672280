"""JSON in and out of the requests API: a body validated against its model, and errors a
client can act on (the message, and the field it is about)."""

from __future__ import annotations

from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from storage.ids import quoted_id

from .schemas import ApiError, error_message

M = TypeVar("M", bound=BaseModel)
MAX_BODY = 1024**2
"""The largest body the HTTP server takes, in bytes (aiohttp's default, stated)."""


async def read(request: web.Request) -> bytes | web.Response:
    """The body, or a JSON 413 when it is larger than the server takes (aiohttp's own
    answer is a text page, which clients of a JSON API cannot read as an error), or a
    JSON 400 when it is not what its headers say (a ``Content-Encoding: gzip`` body that
    is not gzip): the caller's mistake, not the server's failure."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        limit = request.client_max_size
        return error(413, f"the body is larger than the {limit} bytes Signoff takes")
    except web.RequestPayloadError as exc:
        why = str(exc).strip().splitlines()[-1].strip()  # aiohttp's reason, after its status
        refusal = error(400, f"the body could not be read as its headers describe it: {why}")
        # Where its body ends is unknown now: the connection closes after this answer,
        # and what is left of the body is not read (reading it could only fail again).
        refusal.force_close()
        request.content.feed_eof()
        return refusal


async def parse(
    request: web.Request, model: type[M], *, empty_ok: bool = False
) -> M | web.Response:
    """The body as ``model``; else a 413 when too large, or a 400 naming the first field
    that is wrong."""
    raw = await read(request)
    if isinstance(raw, web.Response):
        return raw
    if empty_ok and not raw.strip():
        raw = b"{}"
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        message = error_message(first)
        return error(400, f"{where}: {message}" if where else message, where)


def error(status: int, message: str, field: str | None = None) -> web.Response:
    """A JSON error the client can act on."""
    body = ApiError(error=message, field=field).model_dump(exclude_none=True)
    return web.json_response(body, status=status)


def unknown(run_id: str) -> web.Response:
    """The answer for a request this caller has none of (or Redis no longer has)."""
    return error(404, f"no request {quoted_id(run_id)}", "id")
