"""``POST /api/requests/{id}/start``: a job says, before it runs the approved command, that
it starts it; once, and never on an approval a later request superseded. A second start
(the job retried under the same idempotency key while the first ran, or after it died) is
refused with the request as it stands, whose ``started_at`` and ``outcome`` tell that the
approval was used, so it is used once."""

from __future__ import annotations

from aiohttp import web

from bot.services import Services
from storage.audit import AuditEntry
from storage.records import InterruptRecord
from storage.requests import RequestMeta

from .auth import Caller
from .bodies import error, parse
from .request_answers import respond, view_of, with_request
from .schemas import JobStart


async def start_job(services: Services, request: web.Request, caller: Caller) -> web.StreamResponse:
    """Take the start of the approved command of the caller's request named in the path."""
    return await with_request(
        services,
        request,
        caller,
        lambda record, meta: _start(services, request, caller, record, meta),
        lost="only an approved job starts",
        approved_ok=True,
    )


async def _start(
    services: Services,
    request: web.Request,
    caller: Caller,
    record: InterruptRecord,
    meta: RequestMeta,
) -> web.StreamResponse:
    body = await parse(request, JobStart)
    if isinstance(body, web.Response):
        return body
    view = await view_of(services, record, meta)
    if not view.approved:
        return respond(view, status=409, note="only an approved job starts its command")
    if view.outcome is not None:
        return respond(view, status=409, note="its outcome was reported already")
    now = services.clock.now()
    start = await services.storage.job_runs.start(
        record.run_id, body.attempt, record_id=record.id, at=now
    )
    if start.superseded_by is not None:
        return await _superseded(services, record, meta, by=start.superseded_by)
    assert start.at is not None  # a start not refused says when the first one was
    at = start.at
    if not start.first:
        note = f"its command was started already, at {at.isoformat()}"
        return respond(await view_of(services, record, meta), status=409, note=note)
    entry = AuditEntry.on_record(record, "started", at, user_id=caller.name)
    await services.storage.audit.append_once(entry, once=f"start {body.attempt}")
    return respond(await view_of(services, record, meta))


async def _superseded(
    services: Services, record: InterruptRecord, meta: RequestMeta, *, by: str
) -> web.StreamResponse:
    """The refused start of an approval a later request (record ``by``) superseded: a 409
    naming it once it was made; while it is being made, a 503 to retry (if it is refused,
    the approval stands again)."""
    view = await view_of(services, record, meta)
    if view.superseded_by is not None:
        note = (
            f"request {view.superseded_by} superseded this approval (what it acts on "
            "changed): its command is not started; wait on that request"
        )
        return respond(view, status=409, note=note)
    refusal = error(503, "this approval is being asked again by another request; try again")
    refusal.headers["Retry-After"] = "1"
    return refusal
