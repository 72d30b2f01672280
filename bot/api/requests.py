"""The requests API: any job asks for an approval over HTTP and learns the answer.

- ``POST /api/requests`` posts a card (201; 200 with the existing request when the same
  client sends the same ``idempotency_key`` again).
- ``GET /api/requests/{id}[?wait=SECONDS]`` answers where it stands; with ``wait``, the
  moment it is decided (or when the wait is over): a long-poll (``long_polls``).
- ``POST /api/requests/{id}/withdraw`` withdraws a pending request; the card says so.
- ``POST /api/requests/{id}/outcome`` reports, once, what the approved job did; it goes
  to the card's thread and the audit trail.

Every error is JSON ``{"error", "field"}``: 400 bad input, 401 no valid token, 403 a
channel the client may not post to, 404 unknown (or another client's) request, 409 a
request in the wrong state, 413 a body larger than the server takes, 429 a client over
one of its limits (long-polls open: ``SIGNOFF_API_OPEN_CALLS``; requests pending:
``SIGNOFF_API_PENDING_REQUESTS``), 500 stored data that is damaged, 503 storage
unreachable (or, with ``Retry-After``, another request asking again for the same
approval being made).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta

from aiohttp import web

from bot.errors import SlackUnreachableError
from bot.services import Services
from bot.services.log_context import log_ids
from bot.services.tracing import span
from bot.ui.notes import post_in_thread
from bot.ui.posting import post_interrupt
from bot.ui.redraws import update_message
from storage.audit import AuditEntry
from storage.errors import (
    CorruptRecordError,
    DuplicateInterruptError,
    PendingLimitError,
    StorageError,
)
from storage.records import InterruptRecord
from storage.requests import RequestMeta, request_record_id

from .auth import Authenticator, Caller, unauthenticated
from .bodies import error, parse, unknown
from .key_reuse import key_refusal, lost_key_refusal
from .long_polls import long_poll, wait_seconds
from .lost_requests import approved_kept, keyed_run_id, lost_answer, lost_view_of
from .open_calls import OpenCalls
from .pending_limit import over_pending_limit, too_many_pending
from .rechecks import claim_superseded, kept_unless_made, show_superseded, superseded
from .request_bodies import longest_wait, request_channels, request_digest
from .request_records import REQUESTS_PATH, request_records, request_view, with_names
from .schemas import APPROVED_STATUSES, NewRequest, OutcomeReport, RequestView, Withdrawal
from .watch import RequestWatch

log = logging.getLogger(__name__)

DAMAGED = "stored data this call needs is damaged; an operator can find it in the server's log"
_REQUEST_ID = re.compile(r"^req_[0-9a-f]{32}$")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
"""A W3C trace context header; anything else is not passed on."""
_RETAIN = timedelta(days=30)
"""How long a request's meta outlives its expiry (as long as a pending record)."""

Handler = Callable[[web.Request, Caller], Awaitable[web.StreamResponse]]


def add_requests_routes(
    app: web.Application,
    services: Services,
    *,
    auth: Authenticator,
    open_calls: OpenCalls,
) -> None:
    """Add the requests API to ``app``; its ``RequestWatch`` stops with the app. Each
    long-poll holds one of its client's ``open_calls``."""
    watch = RequestWatch(services.storage, services.outage)
    api = _RequestsApi(services, watch=watch, open_calls=open_calls)

    def guarded(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def route(request: web.Request) -> web.StreamResponse:
            try:
                caller = await auth.caller(request)
                if caller is None:
                    return error(401, unauthenticated(request))
                return await handler(request, caller)
            except CorruptRecordError as exc:  # asking again will not help: not a 503
                log.error("%s %s: %s", request.method, request.path, exc)
                return error(500, DAMAGED)
            except StorageError as exc:
                log.error("%s %s: %s", request.method, request.path, exc)
                return error(503, "storage is unavailable; nothing was changed, try again")

        return route

    async def stop_watch(_: web.Application) -> None:
        await watch.stop()

    app.on_shutdown.append(stop_watch)
    app.router.add_post(REQUESTS_PATH, guarded(api.create))
    app.router.add_get(REQUESTS_PATH + "/{id}", guarded(api.status))
    app.router.add_post(REQUESTS_PATH + "/{id}/withdraw", guarded(api.withdraw))
    app.router.add_post(REQUESTS_PATH + "/{id}/outcome", guarded(api.outcome))


class _RequestsApi:
    def __init__(self, services: Services, *, watch: RequestWatch, open_calls: OpenCalls) -> None:
        self._services = services
        self._watch = watch
        self._open_calls = open_calls

    async def create(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        traceparent = request.headers.get("traceparent", "")
        trace = traceparent if _TRACEPARENT.match(traceparent) else None
        with span("signoff.request.create", traceparent=trace, client=caller.name):
            return await self._create(request, caller, trace)

    async def _create(
        self, request: web.Request, caller: Caller, traceparent: str | None
    ) -> web.StreamResponse:
        body = await parse(request, NewRequest)
        if isinstance(body, web.Response):
            return body
        for field, channel in request_channels(body):
            if not caller.may_post_to(channel):
                return error(403, f"client {caller.name!r} may not post to {channel}", field)
        services = self._services
        run_id, replaces = await keyed_run_id(services, caller.name, body.idempotency_key)
        full = await over_pending_limit(services, caller, body, run_id=run_id)
        if full is not None:
            return full
        resolved = await self._group_ids(body)
        if isinstance(resolved, web.Response):
            return resolved
        body = resolved
        callback_url = body.callback_url or caller.callback_url
        if callback_url is not None:
            problem = self._services.callbacks.refusal(callback_url)
            if problem is None and caller.webhook_secret is None:
                problem = "the admin token has no webhook secret; use a named client's token"
            if problem is not None:
                return error(400, problem, "callback_url")
        digest = request_digest(body)
        refused = await lost_key_refusal(services, caller, replaces, digest)
        if refused is not None:
            return refused
        asked_as = request_record_id(run_id)
        with log_ids(run_id=run_id, record_id=asked_as, channel=body.channel):
            earlier = await superseded(services, caller, body, asked_as=asked_as)
            if isinstance(earlier, web.Response):
                return earlier
            asked = RequestMeta(
                client=caller.name,
                client_since=caller.since,
                title=body.title,
                details=body.details,
                params=tuple(body.params),
                allow_reply=body.allow_reply,
                callback_url=callback_url,
                idempotency_key=body.idempotency_key,
                replaces_lost=replaces,
                acts_on=body.acts_on,
                items=tuple(body.items),
                traceparent=traceparent,
                body_sha256=digest,
            )
            keep_for = longest_wait(body) + _RETAIN
            meta = await services.storage.requests.keep(run_id, asked, ttl=keep_for)
            refused = key_refusal(caller, meta, digest)
            if refused is not None:
                return refused
            marked = await claim_superseded(services, earlier, asked_as=asked_as)
            if isinstance(marked, web.Response):
                return marked
            async with kept_unless_made(services, marked, asked_as=asked_as):
                records = await request_records(
                    services,
                    body,
                    meta,
                    run_id=run_id,
                    asks_again=earlier.record if earlier else None,
                    changed=earlier.changed if earlier else None,
                )
                record = records[0]
                try:
                    await services.storage.interrupts.create_interrupts(
                        records, pending_limit=services.limits.pending_requests
                    )
                except PendingLimitError as exc:  # another of its requests took the last room
                    await services.storage.requests.forget(run_id)
                    return too_many_pending(caller.name, exc.limit)
                except DuplicateInterruptError:
                    existing = await services.storage.queries.get(record.id)
                    if existing is None:  # gone since: retention ended
                        gone = "this idempotency key was used for a request now gone"
                        return error(409, f"{gone}; use another key", "idempotency_key")
                    log.info("request %s of %s asked again: the existing one", run_id, caller.name)
                    return await self._answer(existing, meta, status=200)
            services.due_soon.due(*(r.expires_at for r in records))
            if body.idempotency_key is not None:  # only a key's run id comes again
                await services.storage.resume.forget_end(run_id)
            posted = await post_interrupt(services, record)
            log.info("request %s by %s posted: %s", run_id, caller.name, posted is not None)
            if posted is None:  # in the outbox: answered with what Slack said
                with contextlib.suppress(StorageError):
                    posted = await services.storage.queries.get(record.id)
            if marked is not None:
                await show_superseded(services, marked)
            return await self._answer(posted or record, meta, status=201)

    async def _group_ids(self, body: NewRequest) -> NewRequest | web.Response:
        """``body`` with each user group handle (``@oncall``) replaced by the group's id."""
        update: dict[str, object] = {}
        for name in ("approvers", "escalate_to"):
            ids = await self._ids(getattr(body, name), name)
            if isinstance(ids, web.Response):
                return ids
            update[name] = ids
        ladder = []
        for index, step in enumerate(body.ladder):
            ids = await self._ids(step.approvers, f"ladder.{index}.approvers")
            if isinstance(ids, web.Response):
                return ids
            ladder.append(step.model_copy(update={"approvers": ids}))
        return body.model_copy(update={**update, "ladder": ladder})

    async def _ids(self, given: list[str], where: str) -> list[str] | web.Response:
        ids: list[str] = []
        for index, who in enumerate(given):
            try:
                found = await self._services.directory.group_id(who) if who[0] == "@" else who
            except SlackUnreachableError as exc:
                return error(503, f"{exc}; nothing was changed, try again", f"{where}.{index}")
            if found is None:
                problem = f"no user group {who} that Signoff can see (usergroups:read)"
                return error(400, f"{where}.{index}: {problem}", f"{where}.{index}")
            if found[0] in "UW" and not await self._services.directory.is_user(found):
                problem = f"Slack has no user {who} in this workspace (a typo?)"
                return error(400, f"{where}.{index}: {problem}", f"{where}.{index}")
            ids.append(found)
        return ids

    async def status(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        seconds = wait_seconds(request)
        if isinstance(seconds, web.Response):
            return seconds
        if seconds is None:
            found = await self._find(request, caller, lost="")
            return found if isinstance(found, web.Response) else await self._answer(*found)
        slot = self._open_calls.take(caller.name)
        if slot is None:  # before any work: the calls already open go on
            return self._open_calls.refusal(caller.name)
        with slot:
            found = await self._find(request, caller, lost="")
            if isinstance(found, web.Response):
                return found
            record, meta = found
            return await long_poll(
                request,
                record,
                seconds=seconds,
                watch=self._watch,
                queries=self._services.storage.queries,
                view=lambda latest: self._view(latest, meta),
                gone=lambda run_id: lost_answer(self._services, run_id, meta),
            )

    async def withdraw(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        found = await self._find(request, caller, lost="it was no longer pending")
        if isinstance(found, web.Response):
            return found
        with log_ids(record_id=found[0].id, run_id=found[0].run_id, channel=found[0].channel):
            return await self._withdraw(request, caller, *found)

    async def _withdraw(
        self, request: web.Request, caller: Caller, record: InterruptRecord, meta: RequestMeta
    ) -> web.StreamResponse:
        body = await parse(request, Withdrawal, empty_ok=True)
        if isinstance(body, web.Response):
            return body
        services = self._services
        cancelled = await services.storage.interrupts.cancel_run(
            record.run_id, reason=body.reason, now=services.clock.now(), by=caller.name
        )
        latest = await services.storage.queries.get(record.id) or record
        if not cancelled.count:
            return await self._answer(latest, meta, status=409, note="it was no longer pending")
        log.info("request %s withdrawn by %s", record.run_id, caller.name)
        await update_message(services, latest)
        view = await self._view(latest, meta)
        if view.status != "withdrawn":  # items decided before the withdrawal landed
            return self._respond(view, status=409, note="some of its items were decided first")
        return self._respond(view)

    async def outcome(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        found = await self._find(
            request, caller, lost="only an approved job has an outcome", approved_ok=True
        )
        if isinstance(found, web.Response):
            return found
        with log_ids(record_id=found[0].id, run_id=found[0].run_id, channel=found[0].channel):
            return await self._outcome(request, caller, *found)

    async def _outcome(
        self, request: web.Request, caller: Caller, record: InterruptRecord, meta: RequestMeta
    ) -> web.StreamResponse:
        body = await parse(request, OutcomeReport)
        if isinstance(body, web.Response):
            return body
        view = await self._view(record, meta)
        if view.status not in APPROVED_STATUSES:
            return error(409, f"the request is {view.status}; only an approved job has an outcome")
        services = self._services
        if not await services.storage.resume.first_end(record.run_id):
            return error(409, "an outcome was reported for this request already")
        how = "succeeded" if body.exit_status == 0 else f"failed (exit {body.exit_status})"
        text = f"{meta.title}: {how} in {_duration(body.duration_seconds)}."
        if body.summary:
            text += f"\n{body.summary}"
        try:
            await services.storage.audit.append(
                AuditEntry(
                    event="outcome",
                    record_id=record.id,
                    run_id=record.run_id,
                    at=services.clock.now(),
                    user_id=caller.name,
                    channel=record.channel,
                    message_ts=record.message_ts,
                    detail=body.model_dump_json(),
                )
            )
            await post_in_thread(
                services,
                channel=record.channel,
                thread_ts=record.thread_ts or record.message_ts,
                text=text,
            )
        except StorageError:  # a 503: the client's retry reports it, not a 409
            with contextlib.suppress(StorageError):
                await services.storage.resume.forget_end(record.run_id)
            raise
        return await self._answer(record, meta)

    async def _find(
        self, request: web.Request, caller: Caller, *, lost: str, approved_ok: bool = False
    ) -> tuple[InterruptRecord, RequestMeta] | web.Response:
        """The caller's request named in the path; 404 for another client's; one Redis lost
        is answered ``lost`` (a 409 saying ``lost``, when given), but with ``approved_ok``
        one whose lead was lost after another item was approved is found by that item."""
        run_id = request.match_info["id"]
        nobody = unknown(run_id)
        if not _REQUEST_ID.match(run_id):
            return nobody
        meta = await self._services.storage.requests.meta(run_id)
        if meta is None or not caller.owns(meta):
            return nobody
        record = await self._services.storage.queries.get(request_record_id(run_id))
        if record is None and approved_ok:
            record = await approved_kept(self._services, run_id, meta)
        if record is None:
            return await lost_answer(self._services, run_id, meta, note=lost)
        return record, meta

    async def _view(self, record: InterruptRecord, meta: RequestMeta) -> RequestView:
        """The request as it stands; a request with items reads them all."""
        items = await self._services.storage.queries.batch(record) if record.batch else []
        if len(items) < len(meta.items):  # one lost, or gone: ``lost`` when it was lost
            lost = await lost_view_of(self._services, record.run_id, meta)
            if lost is not None:
                return lost
        return await with_names(self._services, request_view(record, meta, items))

    async def _answer(
        self, record: InterruptRecord, meta: RequestMeta, *, status: int = 200, note: str = ""
    ) -> web.Response:
        return self._respond(await self._view(record, meta), status=status, note=note)

    @staticmethod
    def _respond(view: RequestView, *, status: int = 200, note: str = "") -> web.Response:
        data = json.loads(view.model_dump_json())
        if note:
            data["error"] = f"{note}; it is {view.status}"
        return web.json_response(data, status=status)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s"
