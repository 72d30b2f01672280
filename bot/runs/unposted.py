"""Which of a run's interrupts have no card in Slack yet (or no card of the escalation
step they reached), and what Slack answered the last try to post each: for whoever
started the run (the runs API, ``signoff run``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agent_runtime.interrupts import Interrupt
from bot.services import Services
from bot.ui.slack_failures import NOT_A_MEMBER
from storage.errors import InvalidIdError, StorageError
from storage.ids import record_id
from storage.records import InterruptRecord

log = logging.getLogger(__name__)


async def unposted(
    services: Services, run_id: str, interrupts: Sequence[Interrupt]
) -> dict[str, InterruptRecord]:
    """The records of ``interrupts`` whose card Slack has not taken (``post_error`` says
    why), by interrupt id; none when they cannot be read."""
    found = await run_records(services, run_id, interrupts)
    return {i: r for i, r in found.items() if r.message_ts is None and r.post_error}


async def run_records(
    services: Services, run_id: str, interrupts: Sequence[Interrupt]
) -> dict[str, InterruptRecord]:
    """The stored records of ``interrupts``, by interrupt id; none when they cannot be read."""
    if not interrupts:
        return {}
    try:
        records, _ = await services.storage.queries.many(
            [record_id(run_id, i.id) for i in interrupts]
        )
    except (StorageError, InvalidIdError) as exc:
        log.warning("posting state of run %s not read: %s", run_id, exc)
        return {}
    return {r.runtime_interrupt.id: r for r in records}


def why_unposted(record: InterruptRecord) -> str:
    """Why no approver sees ``record``'s card yet, for ``signoff run`` to print after it."""
    hint = ""
    if record.post_error in NOT_A_MEMBER:
        hint = f" (is the app a member of {record.channel}?)"
    return (
        f"; its card is not in Slack yet (Slack answered {record.post_error}), and a running "
        f"signoff serve, socket or worker keeps trying{hint}"
    )
