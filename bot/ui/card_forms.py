"""A card as Slack is sent it: drawn in full, and compact for when Slack refuses that.

Slack limits each block and, without documenting it, all blocks together; a card whose
parts each fit can still be refused as too long, and is then sent with its long parts cut
(a "Full details" button shows them).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.services import Services
from storage.errors import StorageError
from storage.records import InterruptRecord
from storage.requests import is_request_run

from .batch_message import batch_message
from .cards import card_from_record, verdict_from_record
from .message import SlackMessage, decided_message, pending_message

log = logging.getLogger(__name__)


def trust_label(services: Services, record: InterruptRecord) -> str | None:
    """The "Approve and trust" label from the agent's policy for this tool, if offered: never
    on a quorum's card, which is asked every time, nor on an interrupt a tool's own code
    raised (not an approval): no trust covers one, neither the run's nor a grant's."""
    spec = None if is_request_run(record.run_id) else services.registry.spec(record.agent)
    if spec is None or record.policy.min_approvals > 1:
        return None
    if not record.runtime_interrupt.is_approval:
        return None
    call = record.runtime_interrupt.tool_call
    return spec.policy_for(call.name if call else None).trust_label


def render(
    services: Services, record: InterruptRecord, *, compact: bool = False, run_waits: bool = False
) -> SlackMessage:
    """The message for the record's current state: buttons while pending, the verdict after;
    ``compact``, its long parts cut short; ``run_waits``, its run waits on other requests."""
    card = card_from_record(record, trust_label=trust_label(services, record))
    if card.held is not None and run_waits:
        card = dataclasses.replace(card, held=dataclasses.replace(card.held, run_waits=True))
    verdict = verdict_from_record(record)
    if verdict is None:
        return pending_message(card, compact=compact)
    return decided_message(card, verdict, compact=compact)


@dataclass(frozen=True)
class CardForms:
    """A card as drawn in full, and in the compact form sent when Slack refuses that."""

    full: SlackMessage
    compact: SlackMessage


def single_forms(
    services: Services, record: InterruptRecord, *, run_waits: bool = False
) -> CardForms:
    """The forms of ``record``'s own card (not its batch's)."""
    return CardForms(
        render(services, record, run_waits=run_waits),
        render(services, record, compact=True, run_waits=run_waits),
    )


async def card_forms(services: Services, record: InterruptRecord) -> CardForms:
    """The card showing ``record``: its batch card when it is an item of one."""
    if record.batch is None:
        return single_forms(services, record, run_waits=await _run_waits(services, record))
    batch = await services.storage.queries.batch_card(record)
    return CardForms(batch_message(batch), batch_message(batch, compact=True))


async def _run_waits(services: Services, record: InterruptRecord) -> bool:
    """Whether an agent's approval held in its undo window waits on other requests of its
    run (its card must not say it runs when the window ends); False when unknown."""
    if record.held is None or is_request_run(record.run_id):
        return False
    try:
        pending = await services.storage.queries.pending_for_run(record.run_id)
    except StorageError as exc:
        log.warning("interrupt %s: its run's other requests not read: %s", record.id, exc)
        return False
    return any(other.id != record.id for other in pending)


_TOO_LONG = frozenset({"msg_blocks_too_long", "msg_too_long"})


async def send_fitting(
    record: InterruptRecord,
    forms: CardForms,
    send: Callable[[SlackMessage], Awaitable[AsyncSlackResponse]],
) -> AsyncSlackResponse:
    """``send`` the full card; when Slack refuses it as too long in total (a limit on all
    blocks together it does not document, though each block is within its own), the
    compact card instead."""
    try:
        return await send(forms.full)
    except SlackApiError as exc:
        if exc.response.get("error") not in _TOO_LONG:
            raise
        log.info("interrupt %s: Slack found its card too long, sent compact", record.id)
        return await send(forms.compact)
