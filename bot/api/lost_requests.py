"""A job's request one of whose records Redis lost while it waited (evicted, or deleted
by hand): answered ``lost`` to whoever asks, waits or is called back, ended once by
whichever finds it first (an expiry sweep, a read of the API, a webhook's event)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from aiohttp import web

from bot.schedule.lost import end_if_lost
from bot.services import Services
from storage.records import InterruptRecord
from storage.requests import (
    LostRequest,
    RequestMeta,
    request_record_ids,
    request_run_id,
    request_run_id_after_loss,
)
from storage.sweeps import LOST

from .bodies import unknown
from .request_records import REQUESTS_PATH, item_view, request_view, with_names
from .schemas import APPROVED_STATUSES, ItemView, RequestView


async def lost_view_of(services: Services, run_id: str, meta: RequestMeta) -> RequestView | None:
    """Request ``run_id`` as it stands when Redis lost one of its records while pending
    (ended now if nobody had found it lost yet); None when none of them was lost."""
    found = await _lost_records(services, run_id, meta)
    if found is None:
        return None
    lost, records = found
    return await with_names(services, lost_view(run_id, meta, lost, records))


async def approved_kept(
    services: Services, run_id: str, meta: RequestMeta
) -> InterruptRecord | None:
    """The first approved record kept of request ``run_id`` when Redis lost one of its
    records (its lead, say) after that item was approved: the job may act on it, so its
    outcome is taken; None when no kept item is approved (or none was lost)."""
    found = await _lost_records(services, run_id, meta)
    kept = found[1] if found else []
    return next((r for r in kept if r is not None and r.state in APPROVED_STATUSES), None)


async def keyed_run_id(services: Services, client: str, key: str | None) -> tuple[str, str | None]:
    """The run id a new request of ``client`` is made as, and the lost request it replaces:
    with an idempotency ``key``, the key's, unless Redis lost the request made under it
    (found now, if nobody had yet): it can never be decided, so the next one is made."""
    run_id, replaces = request_run_id(client, key), None
    storage = services.storage
    while key is not None and (meta := await storage.requests.meta(run_id)) is not None:
        found = await _lost_records(services, run_id, meta)
        if found is None or any(r is not None and r.state in APPROVED_STATUSES for r in found[1]):
            break  # not lost, or approved for the items kept: the retry finds it
        run_id, replaces = request_run_id_after_loss(run_id), run_id
    return run_id, replaces


async def _lost_records(
    services: Services, run_id: str, meta: RequestMeta
) -> tuple[LostRequest, list[InterruptRecord | None]] | None:
    """What is kept of request ``run_id`` once one of its records was lost (ended now if
    nobody had found it lost yet), its records in order (None where gone); None when none
    of them was lost."""
    storage = services.storage
    ids = request_record_ids(run_id, len(meta.items))
    read, missing = await storage.queries.many(ids)
    if not missing:
        return None
    for rid in missing:
        if await end_if_lost(services, rid):
            read, _ = await storage.queries.many(ids)  # the others ended with it
    lost = await storage.requests.lost(run_id)
    if lost is None:
        return None
    by_id = {record.id: record for record in read}
    return lost, [by_id.get(rid) for rid in ids]


async def lost_answer(
    services: Services, run_id: str, meta: RequestMeta, *, note: str = ""
) -> web.Response:
    """The answer for a request whose record is gone: ``lost`` (a 409 saying ``note``,
    when given) when Redis lost it while it waited, else 404 as for an unknown one."""
    view = await lost_view_of(services, run_id, meta)
    if view is None:
        return unknown(run_id)
    data = json.loads(view.model_dump_json())
    if note:
        data["error"] = f"{note}; it is {view.status}"
    return web.json_response(data, status=409 if note else 200)


def lost_view(
    run_id: str,
    meta: RequestMeta,
    lost: LostRequest,
    records: Sequence[InterruptRecord | None],
) -> RequestView:
    """The view of a request with a lost record: ``records`` its records in order (None
    where gone). Approved when an item kept was (its job may act on those), else ``lost``;
    who may decide is what a record kept says (none when none is kept)."""
    items: list[ItemView] = []
    if len(records) > 1:
        items = [
            item_view(record)
            if record is not None
            else ItemView(item=item, status="lost", decided_by=None, reason=LOST)
            for item, record in zip(meta.items, records, strict=True)
        ]
    kept = [record for record in records if record is not None]
    approved = [record for record in kept if record.state in APPROVED_STATUSES]
    if approved:
        return request_view(approved[0], meta).model_copy(
            update={"status": "approved", "items": items}
        )
    policy = kept[0].policy if kept else None
    return RequestView(
        id=run_id,
        status="lost",
        title=meta.title,
        channel=lost.channel,
        permalink=kept[0].permalink if kept else None,
        requested_by=meta.client,
        approvers=[*policy.allowed_users, *policy.allowed_groups] if policy else [],
        anyone_in_channel=policy.open_to_channel if policy else False,
        min_approvals=policy.min_approvals if policy else 1,
        approvals=[],
        created_at=lost.created_at,
        expires_at=None,
        escalated=False,
        reminders_sent=0,
        decided_by=None,
        decided_at=lost.at,
        reason=LOST,
        reply=None,
        params=meta.values,
        items=items,
        acts_on=meta.acts_on,
        replaces_lost=meta.replaces_lost,
        status_url=f"{REQUESTS_PATH}/{run_id}",
    )
