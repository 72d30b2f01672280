"""Granting and revoking trust: "Approve and trust this tool for N minutes" on a card, and
Revoke in App Home. Each is audited; a grant covers later runs of the same agent's tool
in the same channel (``bot.runs.trusted`` applies it)."""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.services import Services
from bot.ui.blocks import date_token, user_mention
from bot.ui.mrkdwn import code_span, escape_truncate
from bot.ui.notes import post_mrkdwn
from storage.audit import AuditEntry
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.trust_grants import TrustGrant

log = logging.getLogger(__name__)


async def grant_trust(services: Services, record: InterruptRecord) -> TrustGrant | None:
    """The grant an approved "Approve and trust" (scope ``minutes``) makes, or None (also
    when the request made it before: a decision is followed up again after a decider died).
    StorageError when Redis failed to keep it: a click's decider then leaves the click to
    be taken again, so the grant its card shows is kept."""
    decision = record.decision or {}
    remember = decision.get("remember") or {}
    call = record.runtime_interrupt.tool_call
    if remember.get("scope") != "minutes" or call is None or record.channel is None:
        return None
    if record.state != "approved" or record.decided_by is None or record.decided_at is None:
        return None
    until = record.decided_at + timedelta(minutes=int(remember.get("minutes") or 0))
    grant = await services.storage.trust.grant(
        agent=record.agent,
        tool=call.name,
        channel=record.channel,
        args_digest=record.trust_digest if remember.get("same_args") else None,
        granted_by=record.decided_by,
        granted_at=record.decided_at,
        expires_at=until,
        record_id=record.id,
    )
    if grant is None:
        return None
    await _audit(services, "trust_granted", record.decided_by, grant, record.run_id)
    return grant


async def keep_trust(services: Services, record: InterruptRecord) -> None:
    """Keep the grant of a click's "Approve and trust" (``grant_trust``), then queue its
    run's resume, which storage held back until now: the resumed run's next call of the
    tool meets the grant instead of a new question. StorageError when Redis failed at
    either: the click is left to be taken again, and its run waits for the grant."""
    await grant_trust(services, record)
    await resume_after_grant(services, record)


async def resume_after_grant(services: Services, record: InterruptRecord) -> None:
    """Queue the run's resume that storage held back for the grant of ``record``'s
    "Approve and trust", now stored (or not to be made). StorageError when Redis failed."""
    remember = (record.decision or {}).get("remember") or {}
    if record.state == "approved" and remember.get("scope") == "minutes":
        await services.storage.interrupts.grant_stored(record.id, now=services.clock.now())


async def tell_not_kept(services: Services, record: InterruptRecord) -> None:
    """Say in ``record``'s thread that the grant its approval made was not kept (Redis
    failed as it was stored, past its click): its card reads "Trusted until" all the same."""
    call = record.runtime_interrupt.tool_call
    if record.channel is None or call is None:
        return
    text = (
        ":warning: The trust given with this approval was not kept (Signoff's storage "
        f"failed): later calls of {code_span(call.name, 200)} are asked again."
    )
    thread = record.thread_ts or record.message_ts
    await post_mrkdwn(services, channel=record.channel, thread_ts=thread, text=text)


NOT_YOURS = "Only who gave a trust, or an admin, may revoke it; nothing changed."
ENDED = "This trust had already ended, or was revoked; nothing changed."


async def revoke_trust(services: Services, grant_id: str, *, by: str) -> TrustGrant | str:
    """Remove a grant (its granter or an admin): the one removed, or why nothing was."""
    grants = await services.storage.trust.active(services.clock.now())
    grant = next((g for g in grants if g.id == grant_id), None)
    if grant is None:
        return ENDED
    if by != grant.granted_by and by not in services.admins:
        return NOT_YOURS
    removed = await services.storage.trust.revoke(grant_id, now=services.clock.now())
    if removed is None:  # revoked meanwhile, by another click
        return ENDED
    run_id = removed.record_id.split("/", 1)[0]
    await _audit(services, "trust_revoked", by, removed, run_id)
    await _tell_revoked(services, removed, by=by)
    return removed


async def _tell_revoked(services: Services, grant: TrustGrant, *, by: str) -> None:
    """Say in the thread of the card that gave ``grant`` that it ended early: that card
    still reads "Trusted until", which no longer holds."""
    try:
        record = await services.storage.queries.get(grant.record_id)
    except StorageError as exc:
        log.warning("trust %s revoked, but its card's thread not told: %s", grant.id, exc)
        return
    if record is None or record.channel is None:
        return
    text = (
        f":unlock: {user_mention(by)} revoked this trust {date_token(services.clock.now())}: "
        f"{code_span(grant.tool, 200)} of *{escape_truncate(grant.agent, 200)}* in this "
        "channel is asked again from now on."
    )
    thread = record.thread_ts or record.message_ts
    await post_mrkdwn(services, channel=record.channel, thread_ts=thread, text=text)


async def _audit(services: Services, event: str, user: str, grant: TrustGrant, run_id: str) -> None:
    """Audit a grant made or revoked; storage failing here changes neither, so it is
    logged, not raised: the grant stays kept (or revoked) as the cards say."""
    scope = "these arguments" if grant.args_digest else "any arguments"
    detail = f"{grant.id}: {grant.agent}/{grant.tool} in {grant.channel}, {scope}, until "
    entry = AuditEntry(
        event=event,
        record_id=grant.record_id,
        run_id=run_id,
        at=services.clock.now(),
        user_id=user,
        channel=grant.channel,
        detail=detail + grant.expires_at.isoformat(),
    )
    try:
        await services.storage.audit.append(entry)
    except StorageError as exc:
        log.error("trust %s: %s not audited: %s", grant.id, event, exc)
