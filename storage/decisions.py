"""Decisions on interrupt records: a click's, a batch's, an undo, and an app's answer.
Each is one Lua script over the record's keys and the indexes it touches."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Literal, cast

from agent_runtime.interrupts import Decision

from .epoch import to_ms
from .errors import CorruptRecordError, InvalidIdError
from .ids import check_id, is_record_id, split_record_id
from .outcomes import DecideOutcome, RefusalReason
from .records import InterruptRecord
from .refusals import Refusal
from .retention import millis
from .transitions import RecordTransitions

log = logging.getLogger(__name__)

AppOutcome = Literal["recorded", "recorded_last", "already_decided", "expired", "unknown"]
"""How an app's decision (``decide_in_app``) went."""
APP_HOLD = timedelta(minutes=2)
"""How long the app holds a round it closed without renewing it: if its process dies, the
resume worker takes the round over once this has passed."""


class Decisions(RecordTransitions):
    """The decision steps of ``InterruptStore``."""

    async def decide(
        self,
        interrupt_id: str,
        user_id: str,
        decision: Decision,
        *,
        args_digest: str,
        now: datetime,
        channel: str | None = None,
        message_ts: str | None = None,
        click_id: str | None = None,
        trust_grant: tuple[str, datetime] | None = None,
        hold_for_grant: bool = False,
        untold: tuple[Refusal, datetime] | None = None,
    ) -> DecideOutcome:
        """Record ``user_id``'s decision in one atomic step (one round trip).

        Refused, changing nothing, when the user may not decide, the record is no longer
        pending or has expired, the digest differs from the stored arguments' digest, or
        (when ``channel`` and ``message_ts`` are given) the click came from another
        message. When this decision settles the run's last pending interrupt, the same
        step enqueues the run's resume job. With ``click_id`` (a click stream entry), the
        same step remembers the entry: deciding it again is ``replayed``, changing nothing
        (with the ``reason`` it was refused for, if it was). ``trust_grant``: the grant
        (its id, its end) whose granter's approval this is (no click of theirs), kept with
        the decision; refused as ``trust_ended`` when it was revoked or ends by ``now``.
        ``hold_for_grant``: the caller stores a trust grant for this decision next (an
        "Approve and trust" click's), so the run's resume waits for ``grant_stored``.
        ``untold``: with ``click_id``, the click's refusal entry and when another process
        may tell it: queued if this step refuses the click, so a decider that dies before
        telling it leaves it to ``RefusalQueue.claim``.
        """
        try:
            run_id, _ = split_record_id(interrupt_id)
            check_id("user", user_id)
            seen = [self._keys.click_decided(run_id, click_id)] if click_id else []
        except InvalidIdError:
            return DecideOutcome(status="refused", reason="unknown")
        args = self._decide_args(user_id, decision, args_digest, now, channel, message_ts)
        trust: list[str | int] = []
        if trust_grant is not None:  # its revocation is checked in the same step
            seen.append(self._keys.trust_revoked(self._keys.shard_of(run_id)))
            trust = [trust_grant[0], to_ms(trust_grant[1])]
        if trust_grant is not None and untold is not None:
            raise ValueError("a trust grant's approval is no click: it has no refusal to tell")
        held = "hold" if hold_for_grant else ""
        if untold is not None and seen:
            refusal, until = untold
            shard = self._keys.shard_of(run_id)
            seen += [self._keys.refusals(shard), self._keys.refusal_reasons(shard)]
            args += ["", "", held, "", refusal.member, to_ms(until)]  # "": no batch items follow
        elif trust or hold_for_grant:
            args += ["", *(trust[:1] or [""]), held, *trust[1:]]  # "": no batch items follow
        result = await self._transition("decide", interrupt_id, args, extra_keys=seen)
        if result[0] == "replayed":
            log.info("click %s on %s by %s was decided before", click_id, interrupt_id, user_id)
        return self._decided(interrupt_id, user_id, decision, result)

    async def decide_together(
        self,
        decisions: Sequence[tuple[str, Decision, str]],
        user_id: str,
        *,
        now: datetime,
        channel: str,
        message_ts: str,
    ) -> tuple[list[DecideOutcome], list[tuple[str, CorruptRecordError]]]:
        """Record ``user_id``'s decision on each ``(interrupt id, decision, args digest)``
        of one run (a batch card's items) in one script: nothing, not another click nor a
        withdrawal, lands between them. Each is checked and refused on its own, as by
        ``decide``: a malformed id as ``unknown``, a record that cannot be read back as
        ``damaged``, also listed with its error as ``(interrupt id, error)``."""
        outcomes = [DecideOutcome(status="refused", reason="unknown") for _ in decisions]
        try:
            check_id("user", user_id)
        except InvalidIdError:
            return outcomes, []
        valid = [i for i, (rid, _, _) in enumerate(decisions) if is_record_id(rid)]
        if len({split_record_id(decisions[i][0])[0] for i in valid}) > 1:
            raise ValueError("decide_together takes the records of one run")
        if not valid:
            return outcomes, []
        first, decision, digest = decisions[valid[0]]
        rest = [decisions[i] for i in valid[1:]]
        args = self._decide_args(user_id, decision, digest, now, channel, message_ts)
        args.append(len(rest))
        for rid, more, more_digest in rest:
            item = self._decide_args(user_id, more, more_digest, now, channel, message_ts)
            args += [rid, *item[1:5]]
        # Sent again after its reply was lost, the call gets the first answer.
        marker = self._keys.click_decided(
            split_record_id(first)[0], f"batch-{secrets.token_hex(8)}"
        )
        replies = await self._transition(
            "decide",
            first,
            args,
            extra_keys=[*(self._keys.record(rid) for rid, _, _ in rest), marker],
        )
        damaged = []
        for i, reply in zip(valid, cast(list[list[str]], replies), strict=True):
            rid, each, _ = decisions[i]
            if reply[0] == "damaged":
                damaged.append((rid, CorruptRecordError(self._keys.record(rid), reply[1])))
                outcomes[i] = DecideOutcome(status="refused", reason="damaged")
            else:
                outcomes[i] = self._decided(rid, user_id, each, reply)
        return outcomes, damaged

    def _decide_args(
        self,
        user_id: str,
        decision: Decision,
        args_digest: str,
        now: datetime,
        channel: str | None,
        message_ts: str | None,
    ) -> list[str | int]:
        """The ``decide`` script's ARGV after the record id."""
        vote = {"user_id": user_id, "decision": decision.to_dict(), "at": now.isoformat()}
        return [
            user_id,
            decision.type,
            json.dumps(decision.to_dict(), separators=(",", ":")),
            json.dumps(vote, separators=(",", ":")),
            args_digest,
            to_ms(now),
            channel or "",
            message_ts or "",
            millis(self._retention.decided),
            self._retention.resume_entries,
            self._retention.audit_entries,
            secrets.token_hex(8),
        ]

    def _decided(
        self, interrupt_id: str, user_id: str, decision: Decision, result: list[str]
    ) -> DecideOutcome:
        """The outcome the ``decide`` script replied with."""
        status = result[0]
        key = self._keys.record(interrupt_id)
        record = InterruptRecord.from_json(key, result[3]) if len(result) > 3 else None
        if status == "replayed":
            reason = cast(RefusalReason, result[1]) if result[1] else None
            first = result[2] or None
            return DecideOutcome(status="replayed", reason=reason, record=record, first=first)
        if status == "refused":
            reason = cast(RefusalReason, result[1])
            log.info("decision on %s by %s refused: %s", interrupt_id, user_id, reason)
            return DecideOutcome(status="refused", reason=reason, record=record)
        log.info("decision on %s by %s: %s (%s)", interrupt_id, user_id, decision.type, status)
        return DecideOutcome(
            status=cast(Literal["recorded", "progress", "held"], status),
            record=record,
            resume_job_id=result[2] or None,
        )

    async def grant_stored(self, interrupt_id: str, *, now: datetime) -> str | None:
        """Queue the run's resume that the "Approve and trust" of ``interrupt_id`` held back
        until its trust grant was stored (or found not to be made), so the resumed run's
        next call of the tool meets the grant. The job's id; None when it was queued before,
        or other interrupts of the run still wait. Once per record, however often called."""
        run_id, _ = split_record_id(interrupt_id)
        args: list[str | int] = [
            to_ms(now),
            millis(self._retention.decided),
            self._retention.resume_entries,
        ]
        waiting = [self._keys.run_granting(run_id)]
        [job] = await self._transition("granted", interrupt_id, args, extra_keys=waiting)
        return job or None

    async def undo(
        self, interrupt_id: str, user_id: str, *, now: datetime, channel: str, message_ts: str
    ) -> DecideOutcome:
        """Undo a decision held in its undo window, clicked on the interrupt's card (or its
        escalation card) by its decider or any approver: the interrupt waits for a decision
        again, votes cleared. ``recorded`` when undone; refused once the window has ended
        (the decision stands) or when nothing is held."""
        try:
            split_record_id(interrupt_id)
            check_id("user", user_id)
        except InvalidIdError:
            return DecideOutcome(status="refused", reason="unknown")
        args: list[str | int] = [
            user_id,
            to_ms(now),
            self._retention.audit_entries,
            channel,
            message_ts,
        ]
        status, reason, text = await self._transition("undo", interrupt_id, args)
        key = self._keys.record(interrupt_id)
        record = InterruptRecord.from_json(key, text) if text else None
        if status != "undone":
            log.info("undo of %s by %s refused: %s", interrupt_id, user_id, reason)
            return DecideOutcome(
                status="refused", reason=cast(RefusalReason, reason), record=record
            )
        log.info("decision on %s undone by %s", interrupt_id, user_id)
        return DecideOutcome(status="recorded", record=record)

    async def decide_in_app(
        self, interrupt_id: str, by: str, decision: Decision, *, now: datetime
    ) -> tuple[AppOutcome, InterruptRecord | None]:
        """Record a decision made in the app that runs the agent (an AG-UI client's
        resume), in one atomic step; the first answer wins, in Slack or in the app. Past its
        expiry (before the sweep), a record takes only a denial. ``recorded_last``: it was
        the run's last open card, and the app holds the round (it runs it itself, and no
        resume job is queued) for ``APP_HOLD``, until it renews, finishes
        (``app_round_done``) or hands the round over (``hand_over``)."""
        try:
            split_record_id(interrupt_id)
        except InvalidIdError:
            return "unknown", None
        result = await self._transition(
            "decide_app",
            interrupt_id,
            [
                by,
                decision.type,
                json.dumps(decision.to_dict(), separators=(",", ":")),
                to_ms(now),
                millis(self._retention.decided),
                self._retention.audit_entries,
                to_ms(now + APP_HOLD),
                secrets.token_hex(8),
            ],
            extra_keys=self._app_round_keys(interrupt_id),
        )
        status = cast(AppOutcome, result[0])
        return status, None if status == "unknown" else self._record(interrupt_id, result[2:])

    async def renew_app_round(self, record_id: str, *, now: datetime) -> None:
        """Keep holding the round ``record_id`` closed while the app's run goes on."""
        run_id, _ = split_record_id(record_id)
        async with self._client.guard("renew an app's round"):
            await self._client.raw.zadd(
                self._app_rounds(run_id), {record_id: to_ms(now + APP_HOLD)}, xx=True
            )

    async def app_round_done(self, record_id: str) -> bool:
        """The app ran the round ``record_id`` closed to its end. False when the round had
        been handed to the resume worker meanwhile (its hold lapsed)."""
        done = await self._transition(
            "app_round_done",
            record_id,
            [secrets.token_hex(8)],
            extra_keys=self._app_round_keys(record_id),
        )
        return bool(done)

    async def hand_over(self, record_id: str, *, now: datetime) -> str:
        """Queue the resume job of the round ``record_id`` closed in the app, the app not
        running it to its end (its run failed, or its hold lapsed): the resume worker runs
        it, with retries. Once: '' when the app no longer held the round."""
        job = await self._client.eval(
            "hand_over",
            [*self._transition_keys(record_id), *self._app_round_keys(record_id)],
            [
                record_id,
                to_ms(now),
                millis(self._retention.decided),
                self._retention.resume_entries,
                secrets.token_hex(8),
            ],
        )
        if job:
            log.info("round of %s handed to the resume worker as job %s", record_id, job)
        return str(job or "")

    async def lapsed_app_rounds(self, now: datetime) -> list[str]:
        """The records closing rounds whose app let its hold lapse, every shard's."""

        async def of(shard: int) -> list[str]:
            async with self._client.guard("read the app rounds"):
                found = await self._client.raw.zrangebyscore(
                    self._keys.app_rounds(shard), "-inf", to_ms(now), start=0, num=100
                )
            return [str(rid) for rid in found]

        found = await asyncio.gather(*(of(shard) for shard in self._keys.all_shards))
        return [rid for rids in found for rid in rids]

    def _app_rounds(self, run_id: str) -> str:
        return self._keys.app_rounds(self._keys.shard_of(run_id))

    def _app_round_keys(self, record_id: str) -> list[str]:
        """The shard's app rounds and the round ``record_id`` closes: an app round's
        scripts' KEYS after the transition's."""
        run_id, _ = split_record_id(record_id)
        return [self._app_rounds(run_id), self._keys.app_round(record_id)]
