"""A client's request found by the id in its path, and answered with where it stands."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import ValidationError

from bot.services import Services
from bot.services.log_context import log_ids
from storage.damage import what_is_wrong
from storage.errors import CorruptRecordError
from storage.ids import split_record_id
from storage.job_runs import JobRun
from storage.records import InterruptRecord
from storage.requests import RequestMeta, request_record_id

from .auth import Caller
from .bodies import unknown
from .lost_requests import approved_kept, lost_answer, lost_view_of
from .request_records import request_view, with_names
from .schemas import OutcomeReport, OutcomeView, RequestView

_REQUEST_ID = re.compile(r"^req_[0-9a-f]{32}$")


async def find_request(
    services: Services,
    request: web.Request,
    caller: Caller,
    *,
    lost: str,
    approved_ok: bool = False,
) -> tuple[InterruptRecord, RequestMeta] | web.Response:
    """The caller's request named in the path; 404 for another client's; one Redis lost
    is answered ``lost`` (a 409 saying ``lost``, when given), but with ``approved_ok``
    one whose lead was lost after another item was approved is found by that item."""
    run_id = request.match_info["id"]
    nobody = unknown(run_id)
    if not _REQUEST_ID.match(run_id):
        return nobody
    meta = await services.storage.requests.meta(run_id)
    if meta is None or not caller.owns(meta):
        return nobody
    record = await services.storage.queries.get(request_record_id(run_id))
    if record is None and approved_ok:
        record = await approved_kept(services, run_id, meta)
    if record is None:
        return await lost_answer(services, run_id, meta, note=lost)
    return record, meta


async def with_request(
    services: Services,
    request: web.Request,
    caller: Caller,
    handle: Callable[[InterruptRecord, RequestMeta], Awaitable[web.StreamResponse]],
    *,
    lost: str,
    approved_ok: bool = False,
) -> web.StreamResponse:
    """``handle`` the caller's request named in the path, its ids in every log line it
    writes; a request not found is answered as ``find_request`` answers it."""
    found = await find_request(services, request, caller, lost=lost, approved_ok=approved_ok)
    if isinstance(found, web.Response):
        return found
    record, meta = found
    with log_ids(record_id=record.id, run_id=record.run_id, channel=record.channel):
        return await handle(record, meta)


async def view_of(services: Services, record: InterruptRecord, meta: RequestMeta) -> RequestView:
    """The request as it stands; a request with items reads them all."""
    items = await services.storage.queries.batch(record) if record.batch else []
    if len(items) < len(meta.items):  # one lost, or gone: ``lost`` when it was lost
        lost = await lost_view_of(services, record.run_id, meta)
        if lost is not None:
            return lost
    view = await with_names(services, request_view(record, meta, items))
    by = record.superseded_by  # a mark by a request never made (or being made) is not told
    if by is not None and await services.storage.queries.get(by) is not None:
        view = view.model_copy(update={"superseded_by": split_record_id(by)[0]})
    return with_job_run(view, await services.storage.job_runs.read(record.run_id))


def with_job_run(view: RequestView, job: JobRun) -> RequestView:
    """``view`` with what its job told: when it started the command, and its outcome."""
    outcome = None
    if job.outcome is not None and job.reported_at is not None:
        try:
            report = OutcomeReport.model_validate_json(job.outcome)
        except ValidationError as exc:
            raise CorruptRecordError(f"the outcome of {view.id}", what_is_wrong(exc)) from exc
        outcome = OutcomeView(
            exit_status=report.exit_status,
            duration_seconds=report.duration_seconds,
            not_run=report.not_run,
            reported_at=job.reported_at,
        )
    return view.model_copy(update={"started_at": job.started_at, "outcome": outcome})


async def answer(
    services: Services,
    record: InterruptRecord,
    meta: RequestMeta,
    *,
    status: int = 200,
    note: str = "",
) -> web.Response:
    """The request as it stands, as the response; see ``respond``."""
    return respond(await view_of(services, record, meta), status=status, note=note)


def respond(view: RequestView, *, status: int = 200, note: str = "") -> web.Response:
    """``view`` as JSON; a ``note`` (why the call changed nothing) becomes its ``error``."""
    data = json.loads(view.model_dump_json())
    if note:
        data["error"] = f"{note}; it is {view.status}"
    return web.json_response(data, status=status)
