"""Approval requests from outside: a job asks "may I?" over HTTP and waits for the answer.

A request is stored as the one interrupt record of a run of its own (run id ``req_…``),
so it has the record, policy, atomic decision, quorum, expiry, reminders, audit and Slack
card of an agent's interrupt. What the job asked beyond the card (its params' types, a
callback URL, the idempotency key) is kept beside it as ``RequestMeta``.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Self, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_runtime.closed_model import ClosedModel

from .client import RedisClient
from .damage import what_is_wrong
from .epoch import from_ms
from .errors import CorruptRecordError
from .ids import record_id
from .keys import Keys

REQUEST_RUN_PREFIX = "req_"
REQUEST_INTERRUPT = "ask"
"""The interrupt id of every request's one record: ``req_…/ask``."""

ParamType = Literal["string", "integer", "number", "boolean"]
ParamValue = str | int | float | bool
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
_KIND: dict[type, ParamType] = {int: "integer", float: "number"}


def is_request_run(run_id: str) -> bool:
    """True for the run of an external request (no agent to resume)."""
    return run_id.startswith(REQUEST_RUN_PREFIX)


def request_run_id(client: str, idempotency_key: str | None) -> str:
    """A new request's run id; with an idempotency key the same for the same client and
    key, so a retried job finds the request it made before instead of making another."""
    if idempotency_key is None:
        return REQUEST_RUN_PREFIX + uuid.uuid4().hex
    digest = hashlib.sha256(f"{client}\0{idempotency_key}".encode()).hexdigest()
    return REQUEST_RUN_PREFIX + digest[:32]


def request_run_id_after_loss(run_id: str) -> str:
    """The run id a request asked again with the idempotency key of request ``run_id``
    takes once Redis lost that one: a new request, the same for every retry after."""
    digest = hashlib.sha256(f"{run_id}\0lost".encode()).hexdigest()
    return REQUEST_RUN_PREFIX + digest[:32]


def shard_share(limit: int, keys: Keys) -> int:
    """How many pending records of one client's requests each shard may hold under
    ``limit``: all of it on a single Redis; on Redis Cluster, where no one step can count
    every shard, an equal share (rounded up), so the client's total never passes
    ``limit`` by more than the rounding."""
    return math.ceil(limit / len(keys.all_shards))


def request_record_id(run_id: str) -> str:
    """The storage id of a request's record."""
    return record_id(run_id, REQUEST_INTERRUPT)


def request_record_ids(run_id: str, items: int) -> list[str]:
    """The record ids of a request, in order: its own, then one per further item."""
    rest = [record_id(run_id, f"{REQUEST_INTERRUPT}.{n}") for n in range(1, items)]
    return [request_record_id(run_id), *rest]


class Param(ClosedModel):
    """A structured value the job will use, shown on the card; approvers may change it
    only when ``editable``, and only to a value of the same type."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    type: ParamType = "string"
    value: ParamValue
    editable: bool = False

    @model_validator(mode="after")
    def _typed(self) -> Self:
        if "type" not in self.model_fields_set and not isinstance(self.value, str):
            kind = "boolean" if isinstance(self.value, bool) else _KIND[type(self.value)]
            raise ValueError(
                f"param {self.name!r} has no type, so it is a string; for {json.dumps(self.value)} "
                f'give "type": "{kind}"'
            )
        self.check(self.value)
        return self

    def check(self, value: object) -> ParamValue:
        """``value`` when it is of this param's type, else ValueError saying which."""
        is_bool = isinstance(value, bool)
        fits = isinstance(value, _TYPES[self.type]) and (is_bool == (self.type == "boolean"))
        if not fits:
            article = "an" if self.type == "integer" else "a"
            raise ValueError(f"param {self.name!r} must be {article} {self.type}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"param {self.name!r} must be a finite number, got {value!r}")
        if isinstance(value, str) and len(value) > 2000:
            raise ValueError(f"param {self.name!r}: at most 2000 characters")
        return cast(ParamValue, value)


class RequestMeta(BaseModel):
    """What an external request asked for, kept beside its record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    client: str
    client_since: datetime | None = None
    """When the client was created (a later client of the same name is another one)."""
    title: str
    details: str = ""
    params: tuple[Param, ...] = ()
    allow_reply: bool = False
    callback_url: str | None = None
    idempotency_key: str | None = None
    acts_on: str | None = None
    """What the job will act on, as its check printed it: shown on the card."""
    items: tuple[str, ...] = ()
    """Things approved one by one on one batch card."""
    traceparent: str | None = None
    """The W3C trace context the job sent (``traceparent``): the request's spans join it."""
    replaces_lost: str | None = None
    """The request Redis lost that this one, asked with the same idempotency key, replaces."""
    body_sha256: str | None = None
    """The SHA-256 of the body asked (but its ``acts_on``): the same idempotency key with
    another body is refused (None in requests stored before it was kept)."""

    @property
    def values(self) -> dict[str, ParamValue]:
        return {p.name: p.value for p in self.params}

    def check_edit(self, args: dict[str, object]) -> dict[str, ParamValue]:
        """The params after an approver's edit; ValueError when the edit adds or drops a
        param, changes a locked one, or gives a value of the wrong type."""
        if set(args) != {p.name for p in self.params}:
            raise ValueError("keep the same params: none can be added or removed")
        edited: dict[str, ParamValue] = {}
        for param in self.params:
            value = param.check(args[param.name])
            if value != param.value and not param.editable:
                raise ValueError(f"param {param.name!r} cannot be edited")
            edited[param.name] = value
        return edited


@dataclass(frozen=True, kw_only=True)
class LostRequest:
    """A job's request one of whose records Redis lost while pending: it can no longer
    be decided, since ``at`` (when the first was found lost). ``created_at`` is when it was
    asked (``at``, for a request stored by an earlier version)."""

    at: datetime
    created_at: datetime
    channel: str | None


class RequestStore:
    """Keeps each request's ``RequestMeta``: written once, read by the API and webhooks."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def keep(self, run_id: str, meta: RequestMeta, *, ttl: timedelta) -> RequestMeta:
        """Store ``meta`` for ``run_id`` unless one is stored already; the stored one (a
        retried request gets its first body back, so card and record agree)."""
        key = self._keys.request(run_id)
        text = meta.model_dump_json()
        async with self._client.guard("store a request"):
            pipe = self._client.raw.pipeline(transaction=True)
            pipe.set(key, text, nx=True, px=_ms(ttl))
            pipe.get(key)
            _, stored = await pipe.execute()
        return _parse(key, cast(str, stored))

    async def has_room(self, client: str, *, run_id: str, records: int, limit: int) -> bool:
        """Whether ``client``'s requests may add ``records`` pending records in the shard
        of ``run_id`` under ``limit``: a check before anything is stored, while the
        creation itself is what enforces the limit, atomically."""
        index = self._keys.by_client(self._keys.shard_of(run_id))
        async with self._client.guard("count a client's pending requests"):
            pending = await self._client.raw.zlexcount(index, f"[{client}\0", f"({client}\x01")
        return pending + records <= shard_share(limit, self._keys)

    async def pending(self, clients: Sequence[str]) -> dict[str, int]:
        """How many pending records each of ``clients``' requests holds, what counts against
        its limit: one count per client in each shard, all in one round trip."""
        shards = self._keys.all_shards
        async with self._client.guard("count clients' pending requests"):
            pipe = self._client.pipeline()
            for client in clients:
                for shard in shards:
                    index = self._keys.by_client(shard)
                    pipe.zlexcount(index, f"[{client}\0", f"({client}\x01")
            counts = cast(list[int], await pipe.execute())
        per = len(shards)
        return {c: sum(counts[n * per : (n + 1) * per]) for n, c in enumerate(clients)}

    async def forget(self, run_id: str) -> None:
        """Drop the ``RequestMeta`` of ``run_id``: its request was refused before it was made."""
        async with self._client.guard("drop a request"):
            await self._client.raw.delete(self._keys.request(run_id))

    async def lost(self, run_id: str) -> LostRequest | None:
        """What is kept of request ``run_id`` once Redis lost one of its records while it
        was pending; None when none was found lost."""
        key = self._keys.run_place(run_id)
        async with self._client.guard("read a lost request"):
            place = cast(dict[str, str], await self._client.raw.hgetall(key))
        found = [at for name, at in place.items() if name.startswith("lost:")]
        if not found:
            return None
        try:
            at = from_ms(min(int(ms) for ms in found))
            created = place.get("created_at")
            return LostRequest(
                at=at,
                created_at=from_ms(int(created)) if created else at,
                channel=place.get("channel") or None,
            )
        except ValueError as exc:
            raise CorruptRecordError(key, "a time is not a number") from exc

    async def meta(self, run_id: str) -> RequestMeta | None:
        """The stored request of ``run_id``; None when there is none."""
        key = self._keys.request(run_id)
        async with self._client.guard("read a request"):
            text = await self._client.raw.get(key)
        return None if text is None else _parse(key, cast(str, text))


def _parse(key: str, text: str) -> RequestMeta:
    try:
        return RequestMeta.model_validate_json(text)
    except ValidationError as exc:
        raise CorruptRecordError(key, what_is_wrong(exc)) from exc


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)
