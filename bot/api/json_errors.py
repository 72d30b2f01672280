"""JSON errors for every path under the JSON APIs' prefixes (``/api``, ``/agui``): an
unknown path (404), a method a path does not take (405, with ``Allow``), a body too large
(413), or an unexpected exception (500, or 504 for a timeout, as aiohttp answers them; the
traceback in the log only) is answered ``{"error": ...}`` as the APIs' own errors are, not
as aiohttp's text page."""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from .bodies import error

log = logging.getLogger(__name__)

JSON_PREFIXES = ("/api", "/agui")
UNEXPECTED = "the server failed on an unexpected error; its log says what went wrong"
TIMED_OUT = "the server timed out on something this call needs; nothing is known changed"


def _under_json_api(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in JSON_PREFIXES)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's own error answers under the JSON APIs' prefixes, as JSON."""
    if not _under_json_api(request.path):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or request.writer.output_size > 0:
            raise
        return _as_json(request, exc)
    except Exception as exc:
        if request.writer.output_size > 0:  # a stream already under way: nothing to answer
            raise
        log.exception("%s %s failed", request.method, request.path)
        if isinstance(exc, TimeoutError):  # aiohttp's own answer to one is a 504
            return error(504, TIMED_OUT)
        return error(500, UNEXPECTED)


def _as_json(request: web.Request, exc: web.HTTPException) -> web.Response:
    """``exc`` as a JSON error, keeping the headers it carries (a 405's ``Allow``)."""
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        message = f"{request.method} is not allowed on {request.path}; allowed: {allowed}"
    elif isinstance(exc, web.HTTPNotFound):
        message = f"no endpoint {request.path[:200]}"
    elif isinstance(exc, web.HTTPRequestEntityTooLarge):
        message = f"the body is larger than the {request.client_max_size} bytes Signoff takes"
    else:
        message = exc.reason
    response = error(exc.status, message)
    for name in ("Allow", "Retry-After"):
        if name in exc.headers:
            response.headers[name] = exc.headers[name]
    return response
