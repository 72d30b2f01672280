"""Trust grants: an approver's "trust this tool of this agent in this channel for N
minutes" (optionally only with the exact arguments shown), which later runs' approvals
of the same tool meet instead of a new question.

Kept in one hash (id -> grant); expired grants are dropped as they are read. A grant
never decides anything itself: the bot records an approval in the granter's name, which
storage checks like a click (they must still be an approver, and not the requester),
and refuses once the grant is revoked: each shard keeps the ids of revoked grants, which
the step deciding a card under one reads (on Redis Cluster the grants hash is in another
slot than the run's).
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import cast

from pydantic import BaseModel, ConfigDict, ValidationError

from .client import RedisClient
from .damage import what_is_wrong
from .epoch import to_ms
from .errors import CorruptRecordError
from .ids import check_id
from .keys import Keys

_MARK_KEPT = timedelta(days=1)
"""How long past its end a grant's request is remembered as having made it."""


class TrustGrant(BaseModel):
    """Approvals of ``tool`` of ``agent`` in ``channel`` stand until ``expires_at``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    agent: str
    tool: str
    channel: str
    args_digest: str | None = None
    """Only calls with exactly these arguments are covered, when set."""
    granted_by: str
    granted_at: datetime
    expires_at: datetime
    record_id: str
    """The request whose "Approve and trust" made it."""

    def covers(
        self, *, agent: str, tool: str, channel: str | None, digest: str, now: datetime
    ) -> bool:
        return (
            (self.agent, self.tool, self.channel) == (agent, tool, channel)
            and self.args_digest in (None, digest)
            and now < self.expires_at
        )


class TrustGrants:
    """Grants, finds and revokes trust grants."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def grant(
        self,
        *,
        agent: str,
        tool: str,
        channel: str,
        args_digest: str | None,
        granted_by: str,
        granted_at: datetime,
        expires_at: datetime,
        record_id: str,
    ) -> TrustGrant | None:
        """Keep the grant the request ``record_id`` made; None, keeping nothing, when it
        made one before (its decision followed up again, by a decider that took it over)."""
        grant = TrustGrant(
            id="trust_" + secrets.token_hex(8),
            agent=agent,
            tool=tool,
            channel=check_id("channel", channel),
            args_digest=args_digest,
            granted_by=check_id("user", granted_by),
            granted_at=granted_at,
            expires_at=expires_at,
            record_id=record_id,
        )
        keep = expires_at - granted_at + _MARK_KEPT
        kept = await self._client.eval(
            "grant_once",
            [self._keys.trust_grants, self._keys.trust_granted(record_id)],
            [grant.id, grant.model_dump_json(), max(1, int(keep.total_seconds() * 1000))],
        )
        return grant if kept == 1 else None

    async def covering(
        self, *, agent: str, tool: str, channel: str | None, digest: str, now: datetime
    ) -> TrustGrant | None:
        """The newest live grant covering this call, or None."""
        live = [
            g
            for g in await self.active(now)
            if g.covers(agent=agent, tool=tool, channel=channel, digest=digest, now=now)
        ]
        return max(live, key=lambda g: g.granted_at, default=None)

    async def active(self, now: datetime) -> list[TrustGrant]:
        """Every live grant, oldest first; expired ones are deleted on the way."""
        async with self._client.guard("read trust grants"):
            rows = cast(dict[str, str], await self._client.raw.hgetall(self._keys.trust_grants))
        grants: list[TrustGrant] = []
        expired: list[TrustGrant] = []
        for text in rows.values():
            grant = _parse(self._keys.trust_grants, text)
            (grants if now < grant.expires_at else expired).append(grant)
        if expired:
            async with self._client.guard("drop expired trust grants"):
                await self._client.raw.hdel(self._keys.trust_grants, *(g.id for g in expired))
        return sorted(grants, key=lambda g: g.granted_at)

    async def revoke(self, grant_id: str, *, now: datetime) -> TrustGrant | None:
        """Remove a grant; the one removed, or None when there was none. Each shard marks
        it revoked first, so no approval under it is decided once this returns, however
        late the bot found it covering a card (decide.lua checks the mark)."""
        key = self._keys.trust_grants
        async with self._client.guard("read a trust grant"):
            found = cast(str | None, await self._client.raw.hget(key, grant_id))
        if found is not None:
            ends = to_ms(_parse(key, found).expires_at)
            async with self._client.guard("mark a trust grant revoked"):
                for shard in self._keys.all_shards:
                    revoked = self._keys.trust_revoked(shard)
                    marks = self._client.pipeline()
                    marks.zadd(revoked, {grant_id: ends})
                    marks.zremrangebyscore(revoked, "-inf", f"({to_ms(now)}")  # ended anyway
                    await marks.execute()
        marker = self._keys.taken(key, secrets.token_hex(8))
        text = await self._client.take_field(
            key, grant_id, marker=marker, action="revoke a trust grant"
        )
        return None if text is None else _parse(key, text)


def _parse(key: str, text: str) -> TrustGrant:
    try:
        return TrustGrant.model_validate_json(text)
    except ValidationError as exc:
        raise CorruptRecordError(key, f"not a trust grant: {what_is_wrong(exc)}") from exc
