"""The resume an AG-UI app last sent for each thread, as a digest, so the same resume sent
again after its stream was cut off is told from another answer to the same interrupts."""

from __future__ import annotations

from .client import RedisClient
from .keys import Keys
from .sessions import SESSION_TTL


class AppResumes:
    """Keeps, per thread, the digest of the app's last resume, as long as its session."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client, self._keys = client, keys

    async def remember(self, thread_id: str, digest: str) -> None:
        """``digest`` is the resume the app's round on ``thread_id`` now runs with."""
        async with self._client.guard("remember the app's resume"):
            await self._client.raw.set(
                self._keys.app_resume(thread_id), digest, px=int(SESSION_TTL.total_seconds() * 1000)
            )

    async def last(self, thread_id: str) -> str | None:
        """The digest of the app's last resume on ``thread_id``, if any."""
        async with self._client.guard("read the app's resume"):
            found = await self._client.raw.get(self._keys.app_resume(thread_id))
        return None if found is None else str(found)
