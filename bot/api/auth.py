"""Who is calling the HTTP API: a named client by its token, or the admin by
``SIGNOFF_API_TOKEN``. The caller's name is what requests show as "requested by"."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from aiohttp import web
from pydantic import SecretStr

from storage import Storage
from storage.api_clients import ADMIN
from storage.requests import RequestMeta


@dataclass(frozen=True, kw_only=True)
class Caller:
    """An authenticated API client; ``channels`` empty means any channel."""

    name: str
    channels: tuple[str, ...] = ()
    webhook_secret: str | None = None
    callback_url: str | None = None
    admin: bool = False
    since: datetime | None = None
    """When this client was created: a later client of a revoked one's name is another."""

    def may_post_to(self, channel: str) -> bool:
        return not self.channels or channel in self.channels

    def owns(self, meta: RequestMeta) -> bool:
        """Whether this caller may see and act on the request ``meta`` describes: one its
        own client made (not a revoked client of the same name)."""
        if self.admin:
            return True
        same_client = meta.client_since is None or meta.client_since == self.since
        return meta.client == self.name and same_client


def authorization(request: web.Request) -> bytes:
    """The ``Authorization`` header's bytes as sent: aiohttp keeps bytes that are not UTF-8
    as escapes, which compare unequal to every token rather than failing to encode."""
    return request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")


NOT_OPERATOR = (
    "this API takes the operator token (SIGNOFF_API_TOKEN) as 'Authorization: Bearer "
    "<token>'; a job's token (signoff token create) is for /api/requests"
)
"""The 401 of the operator's APIs (runs, AG-UI), which a job's token often reaches."""


def bearer_check(token: SecretStr) -> Callable[[web.Request], bool]:
    """Whether a request carries ``Authorization: Bearer <token>``, compared in constant time."""
    expected = f"Bearer {token.get_secret_value()}".encode()
    return lambda request: hmac.compare_digest(authorization(request), expected)


class Authenticator:
    """Finds the caller of a request from its ``Authorization: Bearer`` header."""

    def __init__(self, storage: Storage, *, admin_token: SecretStr | None) -> None:
        self._storage = storage
        self._is_admin = bearer_check(admin_token) if admin_token else None

    async def caller(self, request: web.Request) -> Caller | None:
        """The caller, or None without a valid token (StorageError when Redis is away)."""
        header = request.headers.get("Authorization", "")
        if self._is_admin is not None and self._is_admin(request):
            return Caller(name=ADMIN, admin=True)
        if not header.startswith("Bearer "):
            return None
        client = await self._storage.api_clients.authenticate(header.removeprefix("Bearer "))
        if client is None:
            return None
        return Caller(
            name=client.name,
            channels=client.channels,
            webhook_secret=client.webhook_secret,
            callback_url=client.callback_url,
            since=client.created_at,
        )


def unauthenticated(request: web.Request) -> str:
    """Why a request without a valid caller is refused: no token, or one Signoff does not
    know (mistyped, revoked, or made for another Signoff's Redis)."""
    if request.headers.get("Authorization", "").startswith("Bearer "):
        return (
            "the API token is not one of this Signoff's (revoked, mistyped, or made by "
            "'signoff token create' on another Redis than this server's REDIS_URL?)"
        )
    return "send an API token as 'Authorization: Bearer <token>'"
