"""Webhooks: each decision, expiry, escalation and withdrawal of a request (and its loss
from Redis, once) is POSTed to its callback URL, signed with the API client's secret,
until the receiver takes it.

``WebhookEvents`` reads request events from storage's webhook consumer group and stores
one delivery per event (the event's stream id is the delivery id; a request with items
gets one, with its outcome, once every item is decided); ``WebhookSender`` sends
what is due, retrying with backoff (5 s, 10 s, ... at most an hour apart) for
``GIVE_UP_AFTER``, or not at all once the receiver answers 410 Gone. A receiver may see
an event twice (a sender died after sending), never two ids for one event: it drops
duplicates by ``X-Signoff-Delivery``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from datetime import timedelta
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from agent_runtime.shown_urls import without_url_secrets
from bot.services import Services
from bot.services.callbacks import CallbackPolicy
from bot.services.consumer_loop import ConsumerLoop
from storage.audit import AuditEntry
from storage.errors import CorruptRecordError, StorageError
from storage.webhooks import GIVE_UP_AFTER, LeasedDelivery, WebhookDelivery

from .lost_requests import lost_view_of
from .request_records import request_view, with_names
from .schemas import FINAL_STATUSES, RequestView
from .signatures import signed_headers

log = logging.getLogger(__name__)

EVENTS = {
    "approved": "request.approved",
    "denied": "request.denied",
    "edited": "request.edited",
    "responded": "request.responded",
    "expired": "request.expired",
    "escalated": "request.escalated",
    "cancelled": "request.withdrawn",
    "approved_by_default": "request.approved",
    "lost": "request.lost",
}
"""Audit events that are sent, and the name each is sent as."""
_FIRST_RETRY, _LAST_RETRY = timedelta(seconds=5), timedelta(hours=1)
_SEND_TIMEOUT = aiohttp.ClientTimeout(total=10)


class WebhookSender:
    """Sends due deliveries; ``run`` looks for due retries every ``interval``."""

    def __init__(self, services: Services, *, interval: timedelta = timedelta(seconds=1)) -> None:
        self._services = services
        self._interval = interval.total_seconds()
        self._stopping = asyncio.Event()
        self._http: aiohttp.ClientSession | None = None

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        try:
            outage = self._services.outage
            while not self._stopping.is_set():
                try:
                    await self.send_due()
                except StorageError as exc:
                    wait = outage.failed("webhooks", exc)
                else:
                    outage.cleared("webhooks")
                    wait = self._interval
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), wait)
        finally:
            if self._http is not None:
                await self._http.close()

    async def send_due(self) -> int:
        """Send every delivery due now; how many the receivers took."""
        services = self._services
        due = await services.storage.webhooks.claim_due(services.clock.now())
        sent = await asyncio.gather(*(self._send(d) for d in due))
        return sum(sent)

    async def _send(self, leased: LeasedDelivery) -> bool:
        services, outbox = self._services, self._services.storage.webhooks
        delivery = leased.delivery
        try:
            client = await services.storage.api_clients.get(delivery.client)
        except CorruptRecordError as exc:  # no secret to sign with, ever: retrying holds it
            await outbox.done(delivery.id)
            log.error(
                "webhook %s dropped: its client's stored record is damaged: %s", delivery.id, exc
            )
            services.metrics.webhooks["dropped"] += 1
            return False
        since = delivery.client_since
        # Told and counted once it has left the outbox: until then it is tried again.
        if client is None or (since is not None and client.created_at != since):
            await outbox.done(delivery.id)
            log.warning("webhook %s dropped: client %s was revoked", delivery.id, delivery.client)
            services.metrics.webhooks["dropped"] += 1
            return False
        refused = services.callbacks.refusal(delivery.url)
        if refused is not None:  # stored under an older check, or the allow list changed
            await outbox.done(delivery.id)
            log.error("webhook %s dropped: %s", delivery.id, refused)
            services.metrics.webhooks["dropped"] += 1
            return False
        body = delivery.body.encode()
        stamp = int(services.clock.now().timestamp())
        headers = signed_headers(
            body, client.webhook_secret, timestamp=stamp, delivery_id=delivery.id
        )
        try:
            async with self._session().post(
                delivery.url, data=body, headers=headers, allow_redirects=False
            ) as answer:
                status: int | str = answer.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            # aiohttp names the URL in some errors: its query string may hold a token.
            status = f"{type(exc).__name__}: {without_url_secrets(str(exc), delivery.url)}"
        if isinstance(status, int) and 300 <= status < 400:  # it could point anywhere
            status = f"{status}: a redirect, which webhooks never follow; give the URL it names"
        if isinstance(status, int) and 200 <= status < 300:
            log.info("webhook %s (%s) delivered", delivery.id, delivery.event)
            await outbox.done(delivery.id)
            services.metrics.webhooks["delivered"] += 1
            return True
        if status == 410:  # the receiver says the endpoint is gone for good
            await outbox.done(delivery.id)
            log.error(
                "webhook %s to %s dropped: the receiver answered 410 Gone; not tried again",
                delivery.id,
                delivery.client,
            )
            services.metrics.webhooks["dropped"] += 1
            return False
        now = services.clock.now()
        if now - delivery.created_at >= GIVE_UP_AFTER:
            await outbox.done(delivery.id)
            log.error(
                "webhook %s to %s given up after %d attempts (last: %s)",
                delivery.id,
                delivery.client,
                delivery.attempts + 1,
                status,
            )
            services.metrics.webhooks["dropped"] += 1
            return False
        # At the latest when it is given up: it is stored only a little longer than that.
        give_up_at = delivery.created_at + GIVE_UP_AFTER
        wait = min(_FIRST_RETRY * (2**delivery.attempts), _LAST_RETRY, give_up_at - now)
        if not await outbox.retry(leased, at=now + wait):
            log.warning(
                "webhook %s to %s not taken (%s); its lease ran out meanwhile: left to the "
                "sender that took it over",
                delivery.id,
                delivery.client,
                status,
            )
            return False
        log.warning(
            "webhook %s to %s not taken (%s); again in %s",
            delivery.id,
            delivery.client,
            status,
            wait,
        )
        services.metrics.webhooks["retried"] += 1
        return False

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            resolver = PublicResolver(self._services.callbacks)
            connector = aiohttp.TCPConnector(resolver=resolver)
            self._http = aiohttp.ClientSession(connector=connector, timeout=_SEND_TIMEOUT)
        return self._http


class WebhookEvents(ConsumerLoop[AuditEntry]):
    """One consumer of one shard's webhook events: stores a delivery per request event."""

    def __init__(
        self, services: Services, *, consumer: str, sender: WebhookSender, shard: int = 0
    ) -> None:
        super().__init__(consumer=consumer, batch=200, outage=services.outage)
        self._services = services
        self._sender = sender
        self._shard = shard

    async def take_over(self, *, min_idle: timedelta, count: int) -> list[AuditEntry]:
        outbox = self._services.storage.webhooks
        return await outbox.take_over_events(
            self.consumer, shard=self._shard, min_idle=min_idle, count=count
        )

    async def read(self, *, count: int, block: timedelta) -> list[AuditEntry]:
        return await self._services.storage.webhooks.read_events(
            self.consumer, shard=self._shard, count=count, block=block
        )

    async def keep(self, entries: list[AuditEntry]) -> None:
        """Nothing to keep: a batch is handled in well under the take-over time."""

    async def handle(self, entries: list[AuditEntry]) -> None:
        stored = dropped = 0
        try:
            for entry in entries:
                if entry.event not in EVENTS:
                    continue
                try:
                    stored += await self._store(entry)
                except CorruptRecordError as exc:  # damaged for good: retrying holds up the rest
                    log.error("webhook of %s event %s dropped: %s", entry.run_id, entry.ref, exc)
                    dropped += 1
            await self._services.storage.webhooks.ack_events(entries)
        except StorageError as exc:
            log.error("webhook events not stored yet: %s", exc)  # taken over again later
            return
        if dropped:  # counted once acknowledged: a batch handled again is not counted again
            self._services.metrics.webhooks["dropped"] += dropped
        if stored:
            try:
                await self._sender.send_due()
            except StorageError as exc:  # stored: the sender's own loop sends them later
                log.warning("webhooks stored, not sent yet: %s", exc)

    async def _store(self, entry: AuditEntry) -> int:
        storage = self._services.storage
        meta = await storage.requests.meta(entry.run_id)
        if meta is None or meta.callback_url is None or entry.ref is None:
            return 0
        # A record lost while pending makes the request lost (or approved, for an item
        # approved before), whichever of its events is read.
        view = await lost_view_of(self._services, entry.run_id, meta)
        if view is None:
            record = await storage.queries.get(entry.record_id)
            if record is None:
                return 0
            items = await storage.queries.batch(record) if record.batch else []
            view = request_view(items[0] if items else record, meta, items)
            view = await with_names(self._services, view)
        event, delivery_id = EVENTS[entry.event], entry.ref
        if meta.items or view.status == "lost":
            # Its items are decided one by one (or its records lost and the rest ended), but
            # the request is one: it is sent once, when it has its outcome, under an id
            # every one of its events makes the same.
            if view.status not in FINAL_STATUSES:
                return 0
            event, delivery_id = f"request.{view.status}", f"{entry.run_id}.{view.status}"
        delivery = WebhookDelivery(
            id=delivery_id,
            url=meta.callback_url,
            client=meta.client,
            client_since=meta.client_since,
            event=event,
            body=_body(delivery_id, event, entry, view),
            created_at=entry.at,
        )
        return int(await storage.webhooks.add(delivery, due=entry.at))


def _body(delivery_id: str, event: str, entry: AuditEntry, view: RequestView) -> str:
    """What the receiver gets: the event, when it happened, and the request as it stands."""
    data: dict[str, Any] = {
        "delivery_id": delivery_id,
        "event": event,
        "occurred_at": entry.at.isoformat(),
        "request": json.loads(view.model_dump_json()),
    }
    return json.dumps(data, separators=(",", ":"))


class PublicResolver(AbstractResolver):
    """Resolves as ``inner`` does (the system's resolver), but only to addresses
    ``policy`` lets a delivery connect to: a name that points at metadata, or inside the
    network without being allow-listed, or is re-pointed there later, is refused when
    connecting."""

    def __init__(self, policy: CallbackPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner or DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        allowed = [r for r in found if self._policy.may_connect(host, port, r["host"])]
        if not allowed:
            raise OSError(f"{host} resolves only to addresses webhooks may not reach")
        return allowed

    async def close(self) -> None:
        await self._inner.close()
