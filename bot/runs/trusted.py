"""Approvals a trust grant covers: recorded in the granter's name as soon as the card is
posted, so the run goes on without waiting for a new decision."""

from __future__ import annotations

import logging
import secrets

from agent_runtime.interrupts import Decision
from bot.services import Services
from bot.ui.cards import trust_mark
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.requests import is_request_run

log = logging.getLogger(__name__)


async def approve_if_trusted(services: Services, record: InterruptRecord) -> InterruptRecord:
    """``record`` approved under the newest grant that covers it (held in its undo window,
    when the policy has one), or as it was.

    Only a single approver's approval is ever stood in for: a quorum is asked every time,
    and so is a card asking again because what the call acts on changed since it was
    approved (trusting the arguments never covers that change). Storage checks the
    granter like any click (still an approver, not the requester), so a grant outlives
    nobody's right to decide, and refuses the approval if the grant was revoked or ended
    since it was found.
    """
    interrupt = record.runtime_interrupt
    call = interrupt.tool_call
    asks_again = isinstance(interrupt.reason, dict) and interrupt.reason.get("changed") is not None
    if (
        call is None
        or not interrupt.is_approval
        or asks_again
        or record.policy.min_approvals > 1
        or is_request_run(record.run_id)
    ):
        return record
    now = services.clock.now()
    try:
        grant = await services.storage.trust.covering(
            agent=record.agent,
            tool=call.name,
            channel=record.channel,
            digest=record.trust_digest,
            now=now,
        )
        if grant is None:
            return record
        note = trust_mark(grant.id, grant.expires_at)
        now = services.clock.now()  # the grant must still stand when the card is decided
        outcome = await services.storage.interrupts.decide(
            record.id,
            grant.granted_by,
            Decision(type="approve", message=note),
            args_digest=record.args_digest,
            now=now,
            # Sent again after its reply was lost, it is answered as it was the first time.
            click_id=f"trust-{secrets.token_hex(8)}",
            trust_grant=(grant.id, grant.expires_at),
        )
    except StorageError as exc:
        log.warning("interrupt %s: trust not checked, asking instead: %s", record.id, exc)
        return record
    taken = outcome.status in ("recorded", "held") or (
        outcome.status == "replayed" and outcome.reason is None
    )
    if not taken or outcome.record is None:
        log.info("interrupt %s: trust %s not applied (%s)", record.id, grant.id, outcome.reason)
        return record
    log.info("interrupt %s approved under trust %s", record.id, grant.id)
    if outcome.status == "recorded":  # one held in its undo window: when the window ends
        services.metrics.decisions[outcome.record.state] += 1
    return outcome.record
