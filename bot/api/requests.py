"""The requests API: any job asks for an approval over HTTP and learns the answer.

- ``POST /api/requests`` posts a card (201; 200 with the existing request when the same
  client sends the same ``idempotency_key`` again).
- ``GET /api/requests/{id}[?wait=SECONDS]`` answers where it stands; with ``wait``, the
  moment it is decided (or when the wait is over): a long-poll (``long_polls``).
- ``POST /api/requests/{id}/withdraw`` withdraws a pending request; the card says so.
- ``POST /api/requests/{id}/start`` says, once, that the approved job starts its command
  (``job_runs``): a job retried under the same key learns the approval was used.
- ``POST /api/requests/{id}/outcome`` reports, once, what the approved job did; it goes
  to the card's thread and the audit trail (``outcomes``).

Every error is JSON ``{"error", "field"}``: 400 bad input, 401 no valid token, 403 a
channel the client may not post to, 404 unknown (or another client's) request or
path, 405 a method the path does not take (with ``Allow``), 409 a request in the wrong
state, 413 a body larger than the server takes, 429 a client over
one of its limits (long-polls open: ``SIGNOFF_API_OPEN_CALLS``; requests pending:
``SIGNOFF_API_PENDING_REQUESTS``), 500 stored data that is damaged (or an unexpected
failure, which only the log describes), 503 storage
unreachable (or, with ``Retry-After``, another request asking again for the same
approval being made).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import partial

from aiohttp import web

from bot.services import Services
from bot.services.log_context import log_ids
from bot.services.tracing import span
from bot.ui.home import refresh_homes
from bot.ui.posting import post_interrupt
from bot.ui.redraws import update_message
from storage.errors import (
    CorruptRecordError,
    DuplicateInterruptError,
    PendingLimitError,
    StorageError,
)
from storage.records import InterruptRecord
from storage.requests import RequestMeta, request_record_id

from .auth import Authenticator, Caller, unauthenticated
from .bodies import error, parse
from .group_handles import with_group_ids
from .job_runs import start_job
from .key_reuse import key_refusal, lost_key_refusal
from .long_polls import long_poll, wait_seconds
from .lost_requests import keyed_run_id, lost_answer
from .open_calls import OpenCalls
from .outcomes import report_outcome
from .pending_limit import over_pending_limit, too_many_pending
from .rechecks import claim_superseded, kept_unless_made, show_superseded, superseded
from .request_answers import answer, find_request, respond, view_of, with_request
from .request_bodies import longest_wait, request_channels, request_digest
from .request_records import REQUESTS_PATH, request_records
from .schemas import NewRequest, Withdrawal
from .watch import RequestWatch

log = logging.getLogger(__name__)

DAMAGED = "stored data this call needs is damaged; an operator can find it in the server's log"
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
"""A W3C trace context header; anything else is not passed on."""
_RETAIN = timedelta(days=30)
"""How long a request's meta outlives its expiry (as long as a pending record)."""

Handler = Callable[[web.Request, Caller], Awaitable[web.StreamResponse]]


def _withdrawn_unanswered(run_id: str) -> str:
    """The 503 of a withdrawal that landed but whose answer storage failed to give."""
    return (
        f"storage failed after request {run_id} was withdrawn, so it was not answered; "
        "asked again once storage is back, the withdrawal is answered as done already (409)"
    )


def _made_unanswered(run_id: str) -> str:
    """The 503 of a request made (its card posted, or on its way) whose answer storage
    failed to give: where to find it, since asking again without its key asks twice."""
    return (
        f"storage failed after request {run_id} was made, so it was not answered; it is at "
        f"{REQUESTS_PATH}/{run_id} once storage is back (the same idempotency_key again "
        "answers it too), and its card is posted once"
    )


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
    app.router.add_post(REQUESTS_PATH + "/{id}/start", guarded(partial(start_job, services)))
    app.router.add_post(REQUESTS_PATH + "/{id}/outcome", guarded(partial(report_outcome, services)))


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
        resolved = await with_group_ids(services, body)
        if isinstance(resolved, web.Response):
            return resolved
        body = resolved
        callback_url = body.callback_url or caller.callback_url
        if callback_url is not None:
            problem = self._services.callbacks.refusal(callback_url)
            if problem is None and caller.webhook_secret is None:
                problem = "the admin token has no webhook secret; use a named client's token"
            if problem is not None and body.callback_url is None:
                # The body named none: the caller must learn the URL is its client's.
                made = "signoff token create --callback-url"
                problem = f"client {caller.name!r} has a webhook URL ({made}) refused: {problem}"
                return error(400, problem)
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
                    return await answer(self._services, existing, meta, status=200)
            services.due_soon.due(*(r.expires_at for r in records))
            try:
                return await self._posted(caller, meta, record, marked)
            except StorageError as exc:  # made: "nothing was changed" would be untrue
                log.error("request %s by %s made, not answered: %s", run_id, caller.name, exc)
                return error(503, _made_unanswered(run_id))

    async def _posted(
        self,
        caller: Caller,
        meta: RequestMeta,
        record: InterruptRecord,
        marked: InterruptRecord | None,
    ) -> web.Response:
        """The 201 of request ``record``, made: its card posted (or left in the outbox)."""
        services, run_id = self._services, record.run_id
        posted = await post_interrupt(services, record)
        log.info("request %s by %s posted: %s", run_id, caller.name, posted is not None)
        if posted is None:  # in the outbox: answered with what Slack said
            with contextlib.suppress(StorageError):
                posted = await services.storage.queries.get(record.id)
        if marked is not None:
            await show_superseded(services, marked)
        return await answer(services, posted or record, meta, status=201)

    async def status(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        seconds = wait_seconds(request)
        if isinstance(seconds, web.Response):
            return seconds
        if seconds is None:
            found = await find_request(self._services, request, caller, lost="")
            if isinstance(found, web.Response):
                return found
            return await answer(self._services, *found)
        slot = self._open_calls.take(caller.name)
        if slot is None:  # before any work: the calls already open go on
            return self._open_calls.refusal(caller.name)
        with slot:
            found = await find_request(self._services, request, caller, lost="")
            if isinstance(found, web.Response):
                return found
            record, meta = found
            return await long_poll(
                request,
                record,
                seconds=seconds,
                watch=self._watch,
                queries=self._services.storage.queries,
                view=lambda latest: view_of(self._services, latest, meta),
                gone=lambda run_id: lost_answer(self._services, run_id, meta),
            )

    async def withdraw(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        return await with_request(
            self._services,
            request,
            caller,
            lambda record, meta: self._withdraw(request, caller, record, meta),
            lost="it was no longer pending",
        )

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
        try:
            return await self._withdrawn(caller, record, meta, first=cancelled.count > 0)
        except StorageError as exc:
            if not cancelled.count:
                raise
            log.error(
                "request %s withdrawn by %s, not answered: %s", record.run_id, caller.name, exc
            )
            return error(503, _withdrawn_unanswered(record.run_id))

    async def _withdrawn(
        self, caller: Caller, record: InterruptRecord, meta: RequestMeta, *, first: bool
    ) -> web.Response:
        """The answer of a withdrawal that landed (``first``), or found the request no
        longer pending (a 409). A withdrawn one's card and Homes are drawn again either way:
        the call that withdrew it may have failed before it drew them."""
        services = self._services
        latest = await services.storage.queries.get(record.id) or record
        if first or latest.state == "cancelled":
            await update_message(services, latest)
            # The approvers' Homes drop it, in the background: one views.publish each.
            drop = refresh_homes(services, latest)
            services.background.spawn(drop, name=f"withdrawn {record.id}")
        if not first:
            return await answer(services, latest, meta, status=409, note="it was no longer pending")
        view = await view_of(services, latest, meta)
        if view.status != "withdrawn":  # items decided before the withdrawal landed
            log.info(
                "request %s: its pending items withdrawn by %s; it stands %s",
                record.run_id,
                caller.name,
                view.status,
            )
            return respond(view, status=409, note="some of its items were decided first")
        log.info("request %s withdrawn by %s", record.run_id, caller.name)
        return respond(view)
