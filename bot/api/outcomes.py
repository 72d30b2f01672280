"""``POST /api/requests/{id}/outcome``: a job reports, once, what it did once approved (or
why it did not run); the report goes to the card's thread and the audit trail. The same
report sent again (its answer lost) is answered as taken, and told once; one Redis failed
to take part of is forgotten, its audit entry withdrawn if the job's retry reports another."""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import replace

from aiohttp import web

from bot.services import Services
from bot.ui.notes import post_in_thread
from storage.audit import AuditEntry
from storage.errors import StorageError
from storage.job_runs import audit_mark
from storage.records import InterruptRecord
from storage.requests import RequestMeta

from .auth import Caller
from .bodies import error, parse
from .request_answers import answer, view_of, with_request
from .schemas import APPROVED_STATUSES, OutcomeReport


async def report_outcome(
    services: Services, request: web.Request, caller: Caller
) -> web.StreamResponse:
    """Take the outcome of the caller's approved request named in the path."""
    return await with_request(
        services,
        request,
        caller,
        lambda record, meta: _outcome(services, request, caller, record, meta),
        lost="only an approved job has an outcome",
        approved_ok=True,
    )


async def _outcome(
    services: Services,
    request: web.Request,
    caller: Caller,
    record: InterruptRecord,
    meta: RequestMeta,
) -> web.StreamResponse:
    body = await parse(request, OutcomeReport)
    if isinstance(body, web.Response):
        return body
    view = await view_of(services, record, meta)
    if view.status not in APPROVED_STATUSES:
        return error(409, f"the request is {view.status}; only an approved job has an outcome")
    digest = hashlib.sha256(f"{caller.name}\0{body.model_dump_json()}".encode()).hexdigest()
    at = services.clock.now()
    detail = body.model_dump_json(exclude_none=True)
    entry = AuditEntry.on_record(record, "outcome", at, user_id=caller.name, detail=detail)
    withdrawal = replace(entry, event="outcome_withdrawn", detail="")
    runs = services.storage.job_runs
    taken = await runs.report(record.run_id, digest, outcome=detail, at=at, withdrawal=withdrawal)
    if taken == "again":  # sent again, its answer lost: told once already
        return await answer(services, record, meta)
    if taken == "other":
        return error(409, "another outcome was reported for this request already")
    if body.not_run is not None:
        text = f"{meta.title}: not run: {body.not_run}"
    else:
        assert body.exit_status is not None and body.duration_seconds is not None
        how = "succeeded" if body.exit_status == 0 else f"failed (exit {body.exit_status})"
        text = f"{meta.title}: {how} in {_duration(body.duration_seconds)}."
    if body.summary:
        text += f"\n{body.summary}"
    try:
        # Once per report: a retry after the thread's post failed audits it no second time.
        await services.storage.audit.append_once(entry, once=audit_mark(digest))
        await post_in_thread(
            services,
            channel=record.channel,
            thread_ts=record.thread_ts or record.message_ts,
            text=text,
        )
    except StorageError:  # a 503: the client's retry reports it, not a 409
        with contextlib.suppress(StorageError):
            await runs.forget_report(record.run_id, digest)
        raise
    return await answer(services, record, meta)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s"
