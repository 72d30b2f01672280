"""Named API clients: who may ask for approvals over HTTP, and where.

Only a token's SHA-256 is stored (the token is shown once, when the client is created);
a request's "requested by" is the name of the client whose token sent it. Each client
also has a webhook secret its callbacks are signed with.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime
from typing import cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .client import RedisClient
from .damage import what_is_wrong
from .errors import CorruptRecordError, InvalidIdError
from .keys import Keys

CLIENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,62}$")
_CHANNEL = re.compile(r"^[CGD][A-Z0-9]{2,20}$")
TOKEN_PREFIX = "sgn_"
ADMIN = "admin"
"""The name of the client ``SIGNOFF_API_TOKEN`` authenticates; no stored client takes it."""


def token_hash(token: str) -> str:
    """What is stored of a token: its SHA-256 (tokens are random, so no salt is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


class ApiClient(BaseModel):
    """One named client; ``channels`` empty means any channel (the admin client)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=CLIENT_NAME.pattern)
    channels: tuple[str, ...] = ()
    token_sha256: str = ""
    webhook_secret: str = ""
    callback_url: str | None = None
    """Where the webhooks of its requests go when a request names no URL of its own."""
    created_at: datetime | None = None

    @field_validator("channels")
    @classmethod
    def _channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for channel in value:
            if not _CHANNEL.match(channel):
                raise ValueError(f"channel {channel!r}: use a channel id such as C0123ABCD")
        return value

    def may_post_to(self, channel: str) -> bool:
        return not self.channels or channel in self.channels


class ClientExistsError(InvalidIdError):
    """A client of that name exists; revoke it first to issue a new token."""


class ApiClients:
    """Creates, finds and revokes API clients."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def create(
        self,
        name: str,
        *,
        channels: tuple[str, ...] = (),
        callback_url: str | None = None,
        now: datetime,
    ) -> tuple[ApiClient, str]:
        """A new client and its token (returned once; only its hash is kept)."""
        if name == ADMIN:
            raise InvalidIdError(f"{ADMIN!r} is the SIGNOFF_API_TOKEN client; choose another name")
        if not CLIENT_NAME.match(name):
            raise InvalidIdError(
                f"client name {name!r}: use 1-63 lowercase letters, digits or _ . - "
                "(it is shown as who asked)"
            )
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        try:
            client = ApiClient(
                name=name,
                channels=channels,
                token_sha256=token_hash(token),
                webhook_secret=secrets.token_hex(32),
                callback_url=callback_url,
                created_at=now,
            )
        except ValidationError as exc:  # a channel that is not an id: say which, in a line
            raise InvalidIdError(
                "; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors())
            ) from exc
        text = client.model_dump_json()
        async with self._client.guard("create an API client"):
            created = await self._client.raw.hsetnx(self._keys.api_clients, name, text)
            # Sent again after its reply was lost, this very call finds its own client.
            if not created and await self._client.raw.hget(self._keys.api_clients, name) != text:
                raise ClientExistsError(f"a client named {name!r} exists; revoke it first")
            await self._client.raw.hset(self._keys.api_tokens, client.token_sha256, name)
        return client, token

    async def revoke(self, name: str) -> bool:
        """Remove client ``name`` and its token; False when there was none. A client whose
        record is damaged is removed too, with every token that names it."""
        try:
            found = await self.get(name)
        except CorruptRecordError:
            async with self._client.guard("read API tokens"):
                tokens = cast(dict[str, str], await self._client.raw.hgetall(self._keys.api_tokens))
            hashes = [sha for sha, owner in tokens.items() if owner == name]
        else:
            if found is None:
                return False
            hashes = [found.token_sha256]
        async with self._client.guard("revoke an API client"):
            pipe = self._client.raw.pipeline(transaction=True)
            if hashes:
                pipe.hdel(self._keys.api_tokens, *hashes)
            pipe.hdel(self._keys.api_clients, name)
            await pipe.execute()
        return True

    async def get(self, name: str) -> ApiClient | None:
        async with self._client.guard("read an API client"):
            text = await self._client.raw.hget(self._keys.api_clients, name)
        return None if text is None else _parse(self._keys.api_clients, name, cast(str, text))

    async def authenticate(self, token: str) -> ApiClient | None:
        """The client ``token`` belongs to, or None."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 100 or not token.isascii():
            return None
        async with self._client.guard("check an API token"):
            name = await self._client.raw.hget(self._keys.api_tokens, token_hash(token))
        if name is None:
            return None
        found = await self.get(cast(str, name))
        if found is None or not secrets.compare_digest(found.token_sha256, token_hash(token)):
            return None
        return found

    async def all(self) -> list[ApiClient]:
        async with self._client.guard("list API clients"):
            rows = await self._client.raw.hgetall(self._keys.api_clients)
        found = cast(dict[str, str], rows)
        return [_parse(self._keys.api_clients, n, v) for n, v in sorted(found.items())]


def _parse(key: str, name: str, text: str) -> ApiClient:
    """Client ``name`` as ``text`` (its field of hash ``key``) holds it; CorruptRecordError
    says what is wrong with it without quoting it, since it holds the webhook secret (and
    pydantic quotes what it read)."""
    try:
        return ApiClient.model_validate_json(text)
    except ValidationError as exc:
        raise CorruptRecordError(key, what_is_wrong(exc), field=name) from exc
