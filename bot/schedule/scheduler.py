"""The scheduler: expires due interrupts, sends reminders in working hours, drains the
outbox, redraws the cards and posts the notes Slack did not take, tells the refusals a
dead click decider did not, keeps the members of pending interrupts' user groups
current, and ends within minutes a pending request whose record Redis lost.

Working hours are the policy's (``Reminders(start_hour=, end_hour=)``, stored with each
interrupt) on each approver's own clock. A reminder due while every approver is off work
is moved to the earliest start of one of their working days.

Every step is safe with several schedulers running: storage hands each expiry, reminder,
outbox entry, untold refusal and lost record to exactly one caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from bot.services import Services
from bot.services.log_context import log_ids
from bot.services.workhours import in_working_hours, next_start
from bot.ui.blocks import user_mention
from bot.ui.expiries import still_pending, tell_expiry
from bot.ui.home import refresh_homes
from bot.ui.notes import send_mrkdwn, send_queued_notes
from bot.ui.outbox import post_claimed
from bot.ui.redraws import update_message
from bot.ui.requester import tell_batch_decided
from bot.ui.slack_failures import SLACK_FAILURES, passing, retry_after, why_failed
from bot.ui.untold import tell_untold_refusals
from storage.audit import AuditEntry
from storage.errors import StorageError
from storage.interrupts import GROUP_CHECK_EVERY
from storage.outcomes import ExpiryResult, LostRecord, ReminderDue
from storage.records import InterruptRecord
from storage.sweeps import POST_LEASE

from .lost import end_lost
from .lost_check import LostCheck

log = logging.getLogger(__name__)


STOPPED_CONSUMER = timedelta(days=1)
"""A stream consumer idle this long, holding nothing, belongs to a process that stopped."""
CONSUMERS_CHECK_EVERY = timedelta(hours=1)

MadeFinal = Callable[[Services, InterruptRecord], Awaitable[None]]
"""What follows a decision that became final at the end of its undo window, its card's
redraw included."""


class Scheduler:
    """Runs ``tick`` every ``interval`` (sooner when something falls due before the next
    one, or an interrupt created in this process does) until stopped; tests call ``tick``
    directly."""

    def __init__(
        self,
        services: Services,
        *,
        interval: timedelta = timedelta(seconds=5),
        made_final: MadeFinal | None = None,
    ) -> None:
        self._services = services
        self._interval = interval.total_seconds()
        self._stopping = asyncio.Event()
        self._made_final = made_final
        self._consumers_checked: datetime | None = None
        self._lost_check = LostCheck(services)

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        outage = self._services.outage
        while not self._stopping.is_set():
            try:
                await self.tick()
            except StorageError as exc:
                wait = outage.failed("scheduler", exc)
                self._services.due_soon.plan(self._services.clock.now() + timedelta(seconds=wait))
            else:
                outage.cleared("scheduler")
                wait = await self._until_next()
            await self._sleep(wait)

    async def _sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when stopped or when an interrupt created in this
        process falls due before then."""
        waits = {
            asyncio.ensure_future(self._stopping.wait()),
            asyncio.ensure_future(self._services.due_soon.wait()),
        }
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    async def _until_next(self) -> float:
        """Seconds to the next tick: the interval, or less when an expiry or the end of an
        undo window falls due sooner (so "runs at 14:03:10" on a card holds), or when one
        created in this process meanwhile does (it wakes the scheduler)."""
        self._services.due_soon.plan(self._services.clock.now() + timedelta(seconds=self._interval))
        try:
            due = await self._services.storage.interrupts.next_due()
        except StorageError:
            return self._interval
        if due is None:
            return self._interval
        left = (due - self._services.clock.now()).total_seconds()
        return min(self._interval, max(left, 0.01))

    async def tick(self) -> None:
        """One pass: expire, remind, hand the resume worker the rounds whose app let go of
        them, (re)post what the outbox holds, redraw the cards and post the notes Slack did
        not take, tell the refusals dead click deciders did not, check group members,
        every few minutes end the pending requests whose record Redis lost, forget the
        stream consumers of stopped processes."""
        now = self._services.clock.now()
        batches: set[str] = set()
        for expired in await self._services.storage.interrupts.expire_due(now):
            if isinstance(expired, LostRecord):
                with log_ids(record_id=expired.record_id, run_id=expired.run_id):
                    await end_lost(self._services, expired)
                continue
            batch = expired.record.batch
            if batch is None:
                await self._expired(expired)
                continue
            if expired.outcome == "expired":  # counted by the sweep that expired it
                self._services.metrics.decisions["expired"] += 1
            if batch not in batches:  # its items expire together: one update, one note
                batches.add(batch)
                await self._batch_expired(expired.record)
        for reminder in await self._services.storage.interrupts.due_reminders(now):
            if reminder.record.batch in (None, reminder.record.id):  # a batch's lead reminds
                await self._remind(reminder)
        await self.hand_over_lapsed_app_rounds()
        await self.drain_outbox()
        await self.redraw_cards()
        await send_queued_notes(self._services)
        await tell_untold_refusals(self._services)
        await self.check_groups()
        await self._lost_check.check()
        await self.forget_stopped_consumers()

    async def forget_stopped_consumers(self) -> None:
        """Once an hour, remove the stream consumers of processes stopped a day or more:
        each process names its own, so restarts would pile them up in Redis."""
        now = self._services.clock.now()
        checked = self._consumers_checked
        if checked is not None and now - checked < CONSUMERS_CHECK_EVERY:
            return
        self._consumers_checked = now
        forgotten = await self._services.storage.forget_idle_consumers(STOPPED_CONSUMER)
        if forgotten:
            log.info("%d stream consumers of stopped processes removed", forgotten)

    async def hand_over_lapsed_app_rounds(self) -> None:
        """Rounds an app closed on its cards and stopped holding without running them to
        their end (its process died mid-run) go to the resume worker."""
        interrupts, now = self._services.storage.interrupts, self._services.clock.now()
        for record_id in await interrupts.lapsed_app_rounds(now):
            if await interrupts.hand_over(record_id, now=now):
                log.warning("the app holding the round of %s let go of it; resuming it", record_id)

    async def check_groups(self) -> None:
        """Store the current members of pending interrupts' user groups, so someone who
        left a group (a past on-call engineer) may no longer decide, and a newcomer is
        listed and reminded; a message whose approvers changed is updated."""
        services = self._services
        storage = services.storage
        for record in await storage.interrupts.claim_group_checks(services.clock.now()):
            policy = record.policy
            stored = [policy.group_members, *(rung.group_members for rung in policy.rungs)]
            listed = []
            for groups, kept in zip(policy.groups_everywhere, stored, strict=True):
                members = (
                    await services.directory.known_members(groups, max_age=GROUP_CHECK_EVERY)
                    if groups
                    else ()
                )
                listed.append(kept if members is None else members)  # Slack did not answer
            if [set(m) for m in listed] == [set(m) for m in stored]:
                continue
            now = services.clock.now()
            updated = await storage.interrupts.set_group_members(
                record, listed[0], now=now, asked_by="", step_members=listed[1:]
            )
            if updated is not None:
                await update_message(services, updated)

    async def drain_outbox(self) -> int:
        """Post interrupts stored but not yet posted, and escalation cards Slack did not
        take; the number posted."""
        services = self._services
        claimed = await services.storage.interrupts.claim_outbox(services.clock.now())
        return await post_claimed(services, claimed)

    async def redraw_cards(self) -> None:
        """Draw again, from the stored state, the cards Slack did not take a redraw of; one
        it still does not take stays queued."""
        storage = self._services.storage
        for record, leased_until in await storage.interrupts.claim_redraws(
            self._services.clock.now()
        ):
            with log_ids(record_id=record.id, run_id=record.run_id, channel=record.channel):
                if await update_message(self._services, record):
                    await storage.interrupts.redrawn(record.id, leased_until=leased_until)

    async def _expired(self, result: ExpiryResult) -> None:
        record = result.record
        with log_ids(record_id=record.id, run_id=record.run_id, channel=record.channel):
            await self._expiry_news(result)

    async def _expiry_news(self, result: ExpiryResult) -> None:
        services = self._services
        if result.outcome == "released":  # an undo window ended: the decision is final
            if not result.again:  # counted once, not each time its resume is handed out
                services.metrics.decisions[result.record.state] += 1
            if self._made_final is None:
                await update_message(services, result.record)
            else:  # it draws the card once it has kept what the decision makes
                await self._made_final(services, result.record)
            return
        await tell_expiry(services, result)

    async def _batch_expired(self, record: InterruptRecord) -> None:
        services = self._services
        await update_message(services, record)
        await tell_batch_decided(services, await services.storage.queries.batch_card(record))
        await refresh_homes(services, record)

    async def _remind(self, due: ReminderDue) -> None:
        record = due.record
        with log_ids(record_id=record.id, run_id=record.run_id, channel=record.channel):
            await self._send_reminder(due)

    async def _send_reminder(self, due: ReminderDue) -> None:
        services, record = self._services, due.record
        if not await still_pending(services, record):  # decided since it fell due
            return
        policy = record.policy
        approvers = record.awaited(policy.deciders)
        now = services.clock.now()
        awake, starts = [], []
        for user in approvers:
            zone = await services.directory.zone(user)
            start, end = policy.work_start_hour, policy.work_end_hour
            if in_working_hours(zone, now, start_hour=start, end_hour=end):
                awake.append(user)
            else:
                starts.append(next_start(zone, now, start_hour=start))
        if approvers and not awake:
            # Nobody would read it now: hand it out again when the first of them starts work.
            until = min(starts)
            if not await services.storage.reminders.defer(record.id, due.number, until=until):
                log.info("reminder %d of %s dropped: it would come too late", due.number, record.id)
            return
        if record.channel is None or record.message_ts is None:  # remind once it is posted
            if not await services.storage.reminders.defer(
                record.id, due.number, until=now + POST_LEASE
            ):
                log.info(
                    "reminder %d of %s dropped: its card was not posted in time",
                    due.number,
                    record.id,
                )
            return
        mentions = " ".join(user_mention(u) for u in awake[:30])
        text = f"Reminder: this request is still waiting for a decision. {mentions}".strip()
        thread = record.thread_ts or record.message_ts
        try:
            await send_mrkdwn(services, record.channel, thread, text)
        except SLACK_FAILURES as exc:
            log.warning("reminder %d of %s not posted: %s", due.number, record.id, why_failed(exc))
            if passing(exc):  # handed out again later, and then sent only in working hours
                wait = max(timedelta(seconds=retry_after(exc) or 0), POST_LEASE)
                await services.storage.reminders.defer(record.id, due.number, until=now + wait)
            return
        reminded = AuditEntry.on_record(record, "reminded", now, detail=" ".join(awake[:30]))
        await services.storage.audit.append(reminded)
