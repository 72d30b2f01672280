"""Refuse what another web page could make the user's browser send to the sandbox (CSRF).

The page API (`/ui/`) acts as any member and the admin routes (`/admin/`) change how the
workspace behaves, so a web page open in the same browser must not reach them. A body
they accept must be declared JSON: a cross-site form or a `text/plain` fetch cannot set
that content type without a CORS preflight, which the sandbox never grants. And a
request whose `Origin` names another site is refused on every path; the page's own
requests name the sandbox, and apps and scripts send no `Origin` at all. Bound to a
loopback address, the sandbox also answers only requests addressed to a loopback name,
so a page that rebinds its own DNS name to 127.0.0.1 cannot read it either.
"""

from __future__ import annotations

import ipaddress

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from yarl import URL

Address = tuple[str, int]

GUARDED_PREFIXES = ("/ui/", "/admin/")
# DELETE and the rest are never sent cross-site without a preflight; these carry bodies.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _address(origin: str) -> Address | None:
    """`(host, port)` of an `http://` origin; None for `null` and anything else."""
    try:
        url = URL(origin)
    except ValueError:
        return None
    if url.scheme != "http" or not url.host or url.port is None:
        return None
    return url.host.lower(), url.port


class OwnOrigins:
    """The origins the sandbox's page is served from, known once the server listens.

    Bound to a loopback address, the page may be opened as `localhost`, `127.0.0.1` or
    `[::1]`; bound to a specific address, only as that address; bound to every address
    (`0.0.0.0`), as whatever host name the request itself was sent to.
    """

    def __init__(self, host: str) -> None:
        self._host = host
        self.port: int | None = None

    def addressed(self, request: web.Request) -> bool:
        """False when a loopback-bound sandbox is reached under a foreign host name."""
        if not _is_loopback(self._host):
            return True
        host = _address(f"http://{request.host}") if request.host else None
        return host is None or host[0].strip("[]") in LOOPBACK_NAMES or host[0] == self._host

    def allows(self, origin: str, request: web.Request) -> bool:
        address = _address(origin)
        if address is None or self.port is None or address[1] != self.port:
            return False
        host = address[0]
        if _is_wildcard(self._host):
            return address == _address(str(request.url.origin()))
        if _is_loopback(self._host):
            return host in LOOPBACK_NAMES or host == self._host
        return host == self._host.lower()


def browser_guard(own: OwnOrigins) -> Middleware:
    """The aiohttp middleware: 403 for a foreign `Origin`, 415 for a non-JSON body."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not own.addressed(request):
            return web.json_response(
                {"error": f"this sandbox is not served as {request.host}"}, status=421
            )
        origin = request.headers.get("Origin")
        if origin is not None and not own.allows(origin, request):
            return web.json_response(
                {"error": f"requests from {origin} are refused; use the sandbox's own page"},
                status=403,
            )
        if (
            request.path.startswith(GUARDED_PREFIXES)
            and request.method in BODY_METHODS
            and request.content_type != "application/json"
        ):
            return web.json_response(
                {"error": "send the body as JSON, with Content-Type: application/json"},
                status=415,
            )
        return await handler(request)

    return guard
