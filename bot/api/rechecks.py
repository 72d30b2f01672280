"""A request asked again: the job's check found that what it acts on changed after the
approval, so the job did not run. The new request names the approved one it supersedes;
its card shows what changed, in the approved card's thread, and the approved card says it
did not run."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from aiohttp import web

from agent_runtime.messages import JSONValue
from agent_runtime.preconditions import changes
from bot.services import Services
from bot.ui.redraws import update_message
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.requests import request_record_id

from .auth import Caller
from .bodies import error
from .schemas import APPROVED_STATUSES, NewRequest

log = logging.getLogger(__name__)

_SETTLING = 1
"""The seconds a request asking again is told to wait (``Retry-After``) while another
request asking again for the same approval is being made."""


@dataclass(frozen=True, kw_only=True)
class Superseded:
    """The approved request a new one asks again for, and what changed since."""

    record: InterruptRecord
    changed: dict[str, JSONValue]


async def superseded(
    services: Services, caller: Caller, body: NewRequest, *, asked_as: str
) -> Superseded | web.Response | None:
    """The approved request ``body`` supersedes (None when it names none), or the error:
    it must be the caller's, approved, and have shown what it acts on. Asked again
    already by ``asked_as`` (the record this body makes) is a retry: it re-attaches."""
    if body.supersedes is None:
        return None
    run_id = body.supersedes
    if request_record_id(run_id) == asked_as:
        problem = "supersedes: names this request itself; ask again with another idempotency_key"
        return error(409, problem, "supersedes")
    meta = await services.storage.requests.meta(run_id)
    record = await services.storage.queries.get(request_record_id(run_id))
    if meta is None or record is None or not caller.owns(meta):
        return error(404, f"supersedes: no request {run_id}", "supersedes")
    if record.superseded_by not in (None, asked_as) and await _made(services, record.superseded_by):
        return await asked_again_already(services, run_id, by=record.superseded_by)
    if record.state not in APPROVED_STATUSES:
        problem = f"supersedes: request {run_id} is {record.state}, not approved"
        return error(409, problem, "supersedes")
    if meta.acts_on is None:
        return error(400, f"supersedes: request {run_id} showed no acts_on", "supersedes")
    assert body.acts_on is not None  # NewRequest checks it comes with supersedes
    before, now = meta.acts_on.splitlines(), body.acts_on.splitlines()
    changed = changes(list(before), list(now))
    if record.state == "responded":  # the new card says it was answered, not approved
        changed["after"] = "reply"
    return Superseded(record=record, changed=changed)


async def asked_again_already(services: Services, run_id: str, *, by: str | None) -> web.Response:
    """The answer for asking again for request ``run_id`` once it is marked as asked again
    by record ``by``: 409 when that request was made; while it is being made (or refused,
    its mark then undone) nothing is settled yet, so a 503 the client retries."""
    if await _made(services, by):
        problem = f"supersedes: request {run_id} is asked again already"
        return error(409, problem, "supersedes")
    problem = f"supersedes: request {run_id} is being asked again by another request; try again"
    refusal = error(503, problem, "supersedes")
    refusal.headers["Retry-After"] = str(_SETTLING)
    return refusal


async def _made(services: Services, by: str | None) -> bool:
    return by is not None and await services.storage.queries.get(by) is not None


async def claim_superseded(
    services: Services, earlier: Superseded | None, *, asked_as: str
) -> InterruptRecord | web.Response | None:
    """Mark the approved request (if any) as asked again by record ``asked_as``, before
    that record is made, so two requests asking again at once make one card; the marked
    record, or the answer when another request asked again first. A mark left by a
    request never made (its undo failed) is taken over once a minute old: it would
    otherwise answer every later request asking again with a 503."""
    if earlier is None:
        return None
    marked = await services.storage.interrupts.supersede(
        earlier.record.id,
        by=asked_as,
        now=services.clock.now(),
        over=earlier.record.superseded_by,
    )
    if marked is not None:
        return marked
    run_id = earlier.record.run_id
    if (await services.storage.job_runs.read(run_id)).started_at is not None:
        problem = f"supersedes: request {run_id}'s command was started already"
        return error(409, problem, "supersedes")
    latest = await services.storage.queries.get(earlier.record.id)
    by = latest.superseded_by if latest else None
    return await asked_again_already(services, earlier.record.run_id, by=by)


@contextlib.asynccontextmanager
async def kept_unless_made(
    services: Services, marked: InterruptRecord | None, *, asked_as: str
) -> AsyncIterator[None]:
    """Undo ``claim_superseded`` (audited ``ask_again_refused``) unless record ``asked_as``
    exists once the block ends, however it ends (refused, its key's request gone, storage
    failing): an approved request is asked again only by a request that was made."""
    try:
        yield
    finally:
        if marked is not None:
            await _release_unless_made(services, marked, asked_as=asked_as)


async def _release_unless_made(
    services: Services, marked: InterruptRecord, *, asked_as: str
) -> None:
    try:
        if await services.storage.queries.get(asked_as) is None:
            now = services.clock.now()
            await services.storage.interrupts.unsupersede(marked.id, by=asked_as, now=now)
    except StorageError as exc:  # the call fails as it would; the mark is left
        log.error("request %s stays marked as asked again by %s: %s", marked.id, asked_as, exc)


async def show_superseded(services: Services, marked: InterruptRecord) -> None:
    """The approved card says it did not run, and that it is asked again."""
    await update_message(services, marked)
