"""``connect()``: the one entry point that gives the bot everything storage offers."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import TracebackType

from .api_clients import ApiClients
from .app_resumes import AppResumes
from .app_runs import AppRuns
from .audit import AuditLog
from .away import AwayList
from .clicks import ClickStream
from .client import RedisClient
from .deliveries import Deliveries
from .embedded import EmbeddedRedis
from .errors import StorageResponseError
from .home_viewers import HomeViewers
from .interrupts import InterruptStore
from .job_runs import JobRuns
from .keys import CLUSTER_SHARDS, Keys
from .notes import NoteQueue
from .open_index import index_earlier_open_requests
from .queries import InterruptQueries
from .refusals import RefusalQueue
from .reminders import ReminderStore
from .requests import RequestStore
from .resume import ResumeQueue
from .retention import Retention
from .sessions import RedisSessionStore
from .trust_grants import TrustGrants
from .webhooks import WebhookOutbox

log = logging.getLogger(__name__)


def default_data_dir() -> Path:
    """Where the embedded server keeps its data: ``$XDG_DATA_HOME/signoff/redis``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "signoff" / "redis"


@dataclass(kw_only=True)
class Storage:
    """Everything on one connection: sessions, interrupts, reads, reminders, resume queue,
    click stream and the refusals its deciders have not told yet, audit, the Events API
    deliveries already handled, external requests, the API clients that make them and the
    webhooks that tell them."""

    client: RedisClient
    keys: Keys
    sessions: RedisSessionStore
    app_resumes: AppResumes
    app_runs: AppRuns
    interrupts: InterruptStore
    queries: InterruptQueries
    reminders: ReminderStore
    resume: ResumeQueue
    clicks: ClickStream
    audit: AuditLog
    deliveries: Deliveries
    requests: RequestStore
    job_runs: JobRuns
    api_clients: ApiClients
    webhooks: WebhookOutbox
    trust: TrustGrants
    home: HomeViewers
    notes: NoteQueue
    refusals: RefusalQueue
    away: AwayList
    embedded: EmbeddedRedis | None = field(default=None)

    async def forget_idle_consumers(self, min_idle: timedelta) -> int:
        """Remove the stream consumers (every shard's resume, click and webhook readers) idle
        for ``min_idle`` with nothing pending; how many."""
        streams = self.resume, self.clicks, self.webhooks
        groups = [group for stream in streams for group in stream.shard_groups]
        return sum([await group.forget_idle(min_idle) for group in groups])

    async def close(self) -> None:
        """Close the connection, and stop the embedded server if we started one."""
        await self.client.close()
        if self.embedded is not None:
            await asyncio.to_thread(self.embedded.stop)

    async def __aenter__(self) -> Storage:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


async def connect(
    url: str | None,
    *,
    prefix: str = "signoff",
    data_dir: Path | None = None,
    retention: Retention | None = None,
    socket_timeout: float = 5.0,
    retries: int = 4,
) -> Storage:
    """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``, through Sentinel
    ``redis+sentinel://``, or a cluster ``redis+cluster://``), or with None start an
    embedded server keeping its data in ``data_dir``; checks the server answers.
    ``socket_timeout``: the seconds connecting or a command may take before it fails;
    ``retries``: how often a lost connection is tried again (4: for about 1.2 s)."""
    embedded = None
    if url is None:
        embedded = EmbeddedRedis(data_dir or default_data_dir())
        url = await _start(embedded)
        log.info("no REDIS_URL: started an embedded server at %s", url)
    client = RedisClient(url, retries=retries, timeout=socket_timeout)
    keys = Keys(prefix=prefix, shards=CLUSTER_SHARDS if client.cluster else None)
    kept = retention or Retention()
    queries = InterruptQueries(client, keys)
    audit = AuditLog(client, keys, max_entries=kept.audit_entries)
    storage = Storage(
        client=client,
        keys=keys,
        sessions=RedisSessionStore(client, keys),
        app_resumes=AppResumes(client, keys),
        app_runs=AppRuns(client, keys),
        interrupts=InterruptStore(client, keys, kept, queries),
        queries=queries,
        reminders=ReminderStore(client, keys),
        resume=ResumeQueue(client, keys),
        clicks=ClickStream(client, keys),
        audit=audit,
        deliveries=Deliveries(client, keys),
        requests=RequestStore(client, keys),
        job_runs=JobRuns(client, keys, audit),
        api_clients=ApiClients(client, keys),
        webhooks=WebhookOutbox(client, keys),
        trust=TrustGrants(client, keys),
        home=HomeViewers(client, keys),
        notes=NoteQueue(client, keys, marks_kept=kept.decided),
        refusals=RefusalQueue(client, keys),
        away=AwayList(client, keys),
        embedded=embedded,
    )
    try:
        await client.ping()
        await _refuse_old_server(client)
        await _warn_if_evicting(client)
        await storage.resume.ensure_group()
        await storage.clicks.ensure_group()
        await storage.webhooks.ensure_group()
        await index_earlier_open_requests(client, keys)
    except BaseException:
        await storage.close()
        raise
    return storage


async def _refuse_old_server(client: RedisClient) -> None:
    """Stop with one line on a server older than 6.2: every click decider, resume worker and
    webhook reader starts with XAUTOCLAIM (6.2), so on such a server none ever took work.
    A server that keeps INFO to itself is not asked."""
    try:
        answer = await client.raw.info("server")
    except Exception:  # refused or renamed, as managed services may do
        return
    # A cluster may answer for each node: {node: info}.
    infos = [answer] if "redis_version" in answer else list(answer.values())
    for info in infos:
        version = str(info.get("redis_version", "")) if isinstance(info, dict) else ""
        numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
        if numbers and numbers < (6, 2):
            raise StorageResponseError(
                f"Redis at {client.where} is version {version}: Signoff needs Redis or "
                "Valkey 6.2 or newer (it reads its streams with XAUTOCLAIM); upgrade it or "
                "point REDIS_URL at another"
            )


async def _warn_if_evicting(client: RedisClient) -> None:
    """Warn when the server may evict keys under memory pressure: pending requests and
    runs' state carry expiry times, so a ``volatile-*`` (or ``allkeys-*``) policy would
    drop them without a word. A server that keeps CONFIG to itself is not asked."""
    try:
        answer = await client.raw.config_get("maxmemory-policy")
    except Exception:  # refused or renamed, as managed services do
        return
    policy = answer.get("maxmemory-policy") if isinstance(answer, dict) else None
    if policy not in (None, "noeviction"):
        log.warning(
            "Redis at %s evicts keys when full (maxmemory-policy %s): pending requests "
            "could vanish; set maxmemory-policy noeviction",
            client.where,
            policy,
        )


async def _start(server: EmbeddedRedis) -> str:
    """Start ``server`` in a thread: ``start`` polls with ``time.sleep`` until it answers,
    which must not stall the event loop. Cancelled meanwhile, the thread still finishes
    starting it, so it is stopped then rather than left running."""
    starting = asyncio.ensure_future(asyncio.to_thread(server.start))

    def stop_once_started(future: asyncio.Future[str]) -> None:
        if not future.cancelled() and future.exception() is None:
            server.stop()

    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        starting.add_done_callback(stop_once_started)
        raise
