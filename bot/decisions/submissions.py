"""Modal submissions: Edit (validated against the tool's schema), Deny with a reason, Reply.

The decision is recorded before the ack (one Redis round trip, no Web API call), so a bad
edit or a refused decision is shown as a field error inside the modal and nothing changes.
A Redis slow to answer gets the modal a note that the decision is not confirmed yet, in
time for Slack's 3 s, rather than Slack's own error.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from agent_runtime.errors import AgentRuntimeError
from agent_runtime.interrupts import Decision
from bot.agents.registry import BUILD_FAILED
from bot.services import Services
from bot.services.ack_budget import ACK_BUDGET
from bot.ui import ids
from bot.ui.arg_form import read_args
from bot.ui.home import refresh_homes
from bot.ui.modals import errors_for, parse_args
from bot.ui.redraws import update_message
from bot.ui.refusals import (
    DAMAGED,
    FORM_UNCONFIRMED,
    STORAGE_DOWN,
    agent_not_built,
    reason_text,
    refusal_text,
)
from bot.ui.requester import tell_decided
from storage.errors import CorruptRecordError, StorageError
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord
from storage.requests import is_request_run

from .damaged import record_damaged
from .edit_form import check_form_args, edit_fields
from .late import expired_text
from .payloads import Ref, Submission, parse_submission

log = logging.getLogger(__name__)


def listener(services: Services) -> Any:
    """The Bolt view_submission listener for the Edit, Deny and Reply modals. Slack shows
    its own error when the answer takes over 3 s, so the decision waits ``ACK_BUDGET`` at
    most for Redis; past that the modal says it is not confirmed, and the card shows it."""

    async def on_submit(ack: AsyncAck, body: dict[str, Any]) -> None:
        submission = parse_submission(body)
        ref = submission.ref if submission else None
        if submission is None or ref is None:
            await ack()
            log.warning("ignored a malformed view submission")
            return
        # Refusals go under the modal's first input: a generated form has no other.
        block = next(iter(submission.values), ids.INPUT_BLOCK)
        judged: asyncio.Future[Judged] = asyncio.get_running_loop().create_future()
        judging = _judge(services, submission, ref, judged)
        services.background.spawn(judging, name=f"submission {ref.record_id}")
        await asyncio.wait({judged}, timeout=ACK_BUDGET)
        if not judged.done():
            judged.cancel()  # _judge draws the decision on the card when it lands
            log.error("submission by %s not confirmed in time", submission.user.id)
            await ack(response_action="errors", errors=errors_for(FORM_UNCONFIRMED, block))
            return
        try:
            outcome = judged.result()
        except BUILD_FAILED as exc:  # an edit is checked against its agent's tool
            log.exception("submission by %s not checked", submission.user.id)
            text = agent_not_built(exc, so="this edit could not be checked; nothing was decided")
            await ack(response_action="errors", errors=errors_for(text, block))
            return
        except CorruptRecordError as exc:
            await ack(response_action="errors", errors=errors_for(DAMAGED, block))
            user = submission.user.id
            noted = record_damaged(services, exc, ref.record_id, user=user, channel="")
            services.background.spawn(noted, name=f"damaged {ref.record_id}")
            return
        except StorageError as exc:
            log.error("submission by %s not recorded: %s", submission.user.id, exc)
            await ack(response_action="errors", errors=errors_for(STORAGE_DOWN, block))
            return
        if isinstance(outcome, str):
            await ack(response_action="errors", errors=errors_for(outcome, block))
            return
        if isinstance(outcome, dict):  # a sentence under each field of the form that is wrong
            await ack(response_action="errors", errors=outcome)
            return
        if _refused(outcome):
            services.metrics.refusals[outcome.reason or "unknown"] += 1
            text = refusal_text(outcome)
            if outcome.status == "refused" and outcome.reason == "expired":
                text = await expired_text(services, outcome, own_clicks=0)  # a form: no click
            await ack(response_action="errors", errors=errors_for(text, block))
            return
        await ack()
        _take_effect(services, outcome)

    return on_submit


Judged = DecideOutcome | str | dict[str, str]
"""A submission's decision, or what is wrong with its input (``_decide``)."""


async def _judge(
    services: Services, submission: Submission, ref: Ref, judged: asyncio.Future[Judged]
) -> None:
    """Decide ``submission`` for the listener waiting on ``judged``; when it stopped
    waiting (Redis slow to answer), a decision that lands is drawn on the card here."""
    try:
        outcome = await _decide(services, submission, ref)
    except Exception as exc:
        if not judged.done():
            judged.set_exception(exc)
        else:
            log.error("submission by %s not recorded: %r", submission.user.id, exc)
        return
    if not judged.done():
        judged.set_result(outcome)
    elif isinstance(outcome, DecideOutcome) and not _refused(outcome):
        _take_effect(services, outcome)


def _refused(outcome: DecideOutcome) -> bool:
    return outcome.status == "refused" or (outcome.status == "replayed" and bool(outcome.reason))


def _take_effect(services: Services, outcome: DecideOutcome) -> None:
    """Count a decision the form made, and draw it on its card (in the background)."""
    if outcome.status == "recorded" and outcome.state:
        services.metrics.decisions[outcome.state] += 1
    if outcome.record is not None:
        announce = _announce(services, outcome)
        services.background.spawn(announce, name=f"update {outcome.record.id}")


async def _announce(services: Services, outcome: DecideOutcome) -> None:
    """Redraw the card; tell the requester when the decision was the last one needed."""
    assert outcome.record is not None
    await update_message(services, outcome.record)
    if outcome.status in ("recorded", "replayed") and outcome.record.state != "pending":
        await tell_decided(services, outcome.record)
        await refresh_homes(services, outcome.record)
    elif outcome.status == "held":  # in its undo window: Homes offer it no more
        await refresh_homes(services, outcome.record)


async def _decide(
    services: Services, submission: Submission, ref: Ref
) -> DecideOutcome | str | dict[str, str]:
    """Record the modal's decision; a string (or a sentence per form field) says what is
    wrong with the input instead."""
    record = await services.storage.queries.get(ref.record_id)
    if record is None:
        return reason_text("unknown")
    if submission.view.callback_id == ids.EDIT_VIEW and ids.INPUT_BLOCK not in submission.values:
        decision: Decision | str | dict[str, str] = await _form_edit(services, submission, record)
    else:
        decision = _decision(services, submission, record)
    if isinstance(decision, str | dict):
        return decision
    decision = _approval_if_unchanged(decision, record)
    if decision.type == "edit" and is_request_run(record.run_id):
        problem = await _request_edit_problem(services, record, decision)
        if problem is not None:
            return problem
    return await services.storage.interrupts.decide(
        ref.record_id,
        submission.user.id,
        decision,
        args_digest=ref.digest,
        now=services.clock.now(),
        channel=ref.opened_in or None,
        message_ts=ref.opened_at or None,
        # Sent again after its reply was lost, it is answered as it was the first time.
        click_id=f"submission-{secrets.token_hex(8)}",
    )


def _approval_if_unchanged(decision: Decision, record: InterruptRecord) -> Decision:
    """An edit that changes nothing is an approval (where the card offers Approve): the
    card, the audit trail and the run then say approved, not edited."""
    call = record.runtime_interrupt.tool_call
    unchanged = decision.type == "edit" and call is not None and decision.args == call.args
    if unchanged and "approve" in record.policy.decisions:
        return Decision.approve()
    return decision


async def _form_edit(
    services: Services, submission: Submission, record: InterruptRecord
) -> Decision | dict[str, str]:
    """The edit a generated form asks for, or a sentence for each field that is wrong."""
    fields = await edit_fields(services, record)
    if not fields or record.runtime_interrupt.tool_call is None:
        return {}  # no form was offered for this request: nothing is decided
    shown = record.runtime_interrupt.tool_call.args  # as the form was filled
    args, errors = read_args(fields, submission.values, shown)
    if errors:
        return errors
    checked, errors = await check_form_args(services, record, fields, args)
    return errors or Decision.edit(checked)


async def _request_edit_problem(
    services: Services, record: InterruptRecord, decision: Decision
) -> str | None:
    """What is wrong with an edit of a job's params (only editable ones may change, each
    keeping its type), or None."""
    meta = await services.storage.requests.meta(record.run_id)
    if meta is None:
        return reason_text("unknown")
    try:
        meta.check_edit(dict(decision.args or {}))
    except ValueError as exc:
        return f"These params cannot be used: {exc}"
    return None


def replies_allowed(record: InterruptRecord) -> bool:
    """Whether the card offers Reply: a question with options may forbid free text."""
    interrupt = record.runtime_interrupt
    return not interrupt.options or record.policy.free_text_answers


def _decision(
    services: Services, submission: Submission, record: InterruptRecord
) -> Decision | str:
    """The decision the modal asks for, or a message saying what is wrong with the input."""
    callback, text = submission.view.callback_id, submission.text
    if callback == ids.DENY_VIEW:
        return Decision.reject(text.strip())
    if callback == ids.REPLY_VIEW:
        if not replies_allowed(record):
            return reason_text("not_offered")
        if not text.strip():
            return "Write the reply the agent should receive."
        return Decision.respond(text)
    if callback != ids.EDIT_VIEW:
        return "This form is not one of Signoff's."
    args = parse_args(text)
    if isinstance(args, str):
        return args
    call = record.runtime_interrupt.tool_call
    if call is None:
        return "This request has no arguments to edit."
    agent_run = not is_request_run(record.run_id)
    known = agent_run and services.registry.spec(record.agent) is not None
    runnable = services.registry.agent(record.agent) if known else None
    # A workflow checks its agent nodes' tools here, and a node's own input when it resumes;
    # an adapted agent, its framework's tool where it can tell before the run resumes.
    if runnable is not None:
        try:
            runnable.check_edit(call, dict(args))
        except AgentRuntimeError as exc:
            return f"These arguments do not fit {call.name}: {exc}"
    return Decision.edit(dict(args))
