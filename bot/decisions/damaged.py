"""A request whose stored record cannot be read back: whoever acts on it is told nothing
was decided, and the operator finds it in the log, the metrics and the audit trail."""

from __future__ import annotations

import logging

from bot.services import Services
from storage.audit import AuditEntry
from storage.errors import CorruptRecordError, StorageError
from storage.ids import split_record_id

log = logging.getLogger(__name__)


async def record_damaged(
    services: Services, exc: CorruptRecordError, record_id: str, *, user: str, channel: str
) -> None:
    """Log it, count it (``signoff_damaged_records_total``) and audit it as ``damaged``."""
    log.error("%s (acted on by %s)", exc, user)
    services.metrics.damaged_records += 1
    entry = AuditEntry(
        event="damaged",
        record_id=record_id,
        run_id=split_record_id(record_id)[0],
        at=services.clock.now(),
        user_id=user,
        channel=channel or None,
        detail=str(exc)[:500],
    )
    try:
        await services.storage.audit.append(entry)
    except StorageError as failed:
        log.error("audit entry for damaged record %s not written: %s", record_id, failed)
