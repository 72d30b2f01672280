"""What storage keeps per interrupt: the record itself, with who may decide it
(``storage.approvers``) and its votes (``storage.votes``).

They are pydantic models because they cross a trust boundary twice: the bot builds them
from configuration, and they are read back from Redis, where anything could be written.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from agent_runtime.errors import AgentRuntimeError
from agent_runtime.interrupts import Decision, DecisionType, Interrupt, InterruptResponse
from agent_runtime.messages import args_digest

from .approvers import ApproverPolicy, Rung
from .damage import what_is_wrong
from .epoch import from_ms, to_ms
from .errors import CorruptRecordError
from .holds import HeldDecision, Undone, held_fields, read_held, read_undone, undone_fields
from .ids import check_id, record_id
from .record_fields import escalation_step, posted_step, present, stored_policy
from .votes import Vote

InterruptState = Literal[
    "pending", "approved", "denied", "edited", "responded", "expired", "cancelled"
]
FINAL_STATE_OF: dict[DecisionType, InterruptState] = {
    "approve": "approved",
    "reject": "denied",
    "edit": "edited",
    "respond": "responded",
}

_MODEL = ConfigDict(frozen=True, extra="forbid", ser_json_timedelta="float")


class InterruptRecord(BaseModel):
    """One interrupt the bot posts: the runtime interrupt, its policy, state and votes."""

    model_config = _MODEL

    interrupt: dict[str, Any]
    run_id: str
    thread_id: str
    agent: str
    requested_by: str
    policy: ApproverPolicy
    args_digest: str
    created_at: datetime
    expires_at: datetime | None = None
    next_reminder_at: datetime | None = None
    channel: str | None = None
    message_ts: str | None = None
    thread_ts: str | None = None
    permalink: str | None = None
    asked_in: str | None = None
    """The channel the requester asked from; told there (else in a DM) what became of it."""
    state: InterruptState = "pending"
    votes: tuple[Vote, ...] = ()
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision: dict[str, Any] | None = None
    escalated: bool = False
    escalation_channel: str | None = None
    escalation_ts: str | None = None
    """Where the latest escalation card was posted, once escalated: it decides too."""
    escalation_step: int = 0
    """How many steps up the escalation ladder it has gone (``escalated`` once one)."""
    escalation_cards: tuple[tuple[str, str], ...] = ()
    """``(channel, ts)`` of the earlier steps' escalation cards: copies that decide too."""
    escalation_posted: int = 0
    """The highest escalation step whose card was posted (a step Slack refused, then left
    behind, never gets one)."""
    reminders_sent: int = 0
    held: HeldDecision | None = None
    """The deciding click, while its undo window runs (the record is still pending)."""
    undone: Undone | None = None
    """The last held decision someone undid."""
    superseded_by: str | None = None
    """Approved, but not run: what it acts on changed first, and this interrupt asks again."""
    run_withdrawn_by: str | None = None
    """Decided, but not run: its run was withdrawn (by this user) while the decision waited
    for the run's other cards."""
    run_lost: str | None = None
    """The request of its run whose record Redis lost while pending, which ended the run."""
    batch: str | None = None
    """The record id of the first item of the batch card this one is an item of."""
    batch_items: tuple[str, ...] = ()
    """On a batch's first item: the record ids of all its items, in the card's order."""
    trust_grant: str | None = None
    """The trust grant whose granter's approval it is (held or final), when no click made it."""
    post_error: str | None = None
    """What Slack answered the last failed post of its card, until the card is posted."""
    escalation_error: str | None = None
    """What Slack answered the last failed post of the escalation step's card, until posted."""

    @field_validator("interrupt")
    @classmethod
    def _interrupt(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            check_id("interrupt", Interrupt.from_dict(value).id)
        except (KeyError, TypeError, ValueError, AgentRuntimeError) as exc:
            raise ValueError(f"not a runtime interrupt: {exc!r}") from exc
        return value

    @field_validator("run_id", "thread_id", "requested_by")
    @classmethod
    def _ids(cls, value: str) -> str:
        return check_id("run, thread or user", value)

    @classmethod
    def new(
        cls,
        interrupt: Interrupt,
        *,
        run_id: str,
        thread_id: str,
        agent: str,
        requested_by: str,
        policy: ApproverPolicy,
        now: datetime,
        channel: str | None = None,
    ) -> InterruptRecord:
        """A pending record for ``interrupt``, with expiry and first reminder from ``policy``.

        ``args_digest`` fingerprints what the message shows (the tool's arguments, else the
        reason): a click must carry the same digest to decide.
        """
        call = interrupt.tool_call
        shown = call.args if call else {"reason": interrupt.reason}
        expires = now + policy.expires_in if policy.expires_in else None
        reminder = now + policy.reminders[0] if policy.reminders else None
        return cls(
            interrupt=interrupt.to_dict(),
            run_id=run_id,
            thread_id=thread_id,
            agent=agent,
            requested_by=requested_by,
            policy=policy,
            args_digest=args_digest(shown),
            created_at=now,
            expires_at=expires,
            next_reminder_at=reminder if reminder and (not expires or reminder < expires) else None,
            channel=channel,
        )

    @property
    def id(self) -> str:
        """The storage id (``<run_id>/<interrupt id>``) buttons carry and every call takes."""
        return record_id(self.run_id, str(self.interrupt["id"]))

    @property
    def trust_digest(self) -> str:
        """What an "Approve and trust these arguments" grant is bound to: the arguments,
        and what the card showed them acting on (a precondition's answer) when it did, so
        the same arguments acting on more are asked again."""
        reason = self.runtime_interrupt.reason
        acts_on = reason.get("snapshot") if isinstance(reason, dict) else None
        if acts_on is None:
            return self.args_digest
        return args_digest({"args": self.args_digest, "acts_on": acts_on})

    @property
    def approved_by_default(self) -> bool:
        """Whether its expiry approves it (``if_nobody_decides="approve"``): not once someone
        took an approval of it back with Undo (nor, ``expire.lua`` adds, with no card posted)."""
        undid_approval = self.undone is not None and self.undone.was_approval
        return self.policy.if_nobody_decides == "approve" and not undid_approval

    @property
    def reached_rungs(self) -> tuple[Rung, ...]:
        """The escalation steps it has reached so far, the latest last."""
        return self.policy.rungs[: self.escalation_step]

    def awaited(self, users: tuple[str, ...]) -> list[str]:
        """Those of ``users`` whose decision is still wanted: not the requester (unless
        self-approval is allowed), and nobody whose vote, or their stand-in's, is counted."""
        counted = self.approved_by
        if not self.policy.allow_self_approval:
            counted.add(self.requested_by)
        return [user for user in users if user not in counted]

    @property
    def approved_by(self) -> set[str]:
        """Whoever's approval is counted: each approver, and who they stand in for or who
        stands in for them (one voice)."""
        counted = set(self.approvals)
        for delegate, for_user in self.policy.stand_ins:
            if delegate in counted or for_user in counted:
                counted |= {delegate, for_user}
        return counted

    @property
    def escalation_unposted(self) -> bool:
        """Whether the escalation step it reached has no card yet (Slack failed to post it)."""
        return self.escalation_step > self.escalation_posted

    @property
    def runtime_interrupt(self) -> Interrupt:
        return Interrupt.from_dict(self.interrupt)

    @property
    def approvals(self) -> tuple[str, ...]:
        """Distinct users whose approval counts toward the quorum, in order."""
        return tuple(
            dict.fromkeys(v.user_id for v in self.votes if v.decision["type"] == "approve")
        )

    def takes_its_end(self) -> bool:
        """Whether the run can be given this record's answer: a person's decision, or the
        denial an expiry or withdrawal stands for, where the interrupt allows a denial."""
        interrupt = self.runtime_interrupt
        return (
            self.decision is not None
            or not interrupt.is_approval
            or "reject" in interrupt.allowed_decisions
        )

    def response(self) -> InterruptResponse | None:
        """The answer the resumed run receives, or None while the record is pending.

        An expiry or cancellation is a rejection whose metadata says so honestly; it is
        never presented as a person's denial.
        """
        if self.state == "pending":
            return None
        iid = str(self.interrupt["id"])
        meta: dict[str, Any] = {"state": self.state, "decided_by": self.decided_by}
        meta["decided_at"] = self.decided_at.isoformat() if self.decided_at else None
        if self.state == "approved":
            meta["approvers"] = list(self.approvals)
        question = self.runtime_interrupt.question
        if self.decision is not None:
            decision = Decision.from_dict(self.decision)
        elif question:
            decision = Decision.reject(f"it was {self.state} before anyone answered")
        else:
            decision = Decision.reject(f"not approved: the request was {self.state}")
        if question and decision.type == "respond":
            return InterruptResponse(interrupt_id=iid, response=decision.message, metadata=meta)
        if decision.remember is not None and decision.remember.scope == "minutes":
            # A grant for minutes is kept, checked and revoked in storage: the run sees the
            # approval only, or it would trust the grant itself past a revocation.
            decision = dataclasses.replace(decision, remember=None)
        return InterruptResponse(interrupt_id=iid, decision=decision, metadata=meta)

    # -- the Redis hash form --------------------------------------------------------------

    def to_hash(self) -> dict[str, str]:
        """The fields of the record's Redis hash; scripts read and update them in place."""
        data = self.model_dump(mode="json")
        approvals = list(self.approvals)

        def ms(moment: datetime | None) -> str:
            return str(to_ms(moment)) if moment else ""

        return {
            "id": self.id,
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "agent": self.agent,
            "requested_by": self.requested_by,
            "interrupt": json.dumps(data["interrupt"], separators=(",", ":")),
            "policy": json.dumps(data["policy"], separators=(",", ":")),
            "args_digest": self.args_digest,
            "created_at": ms(self.created_at),
            "expires_at": ms(self.expires_at),
            "next_reminder_at": ms(self.next_reminder_at),
            "reminder_index": str(self.reminders_sent),
            "channel": self.channel or "",
            "state": self.state,
            "votes": json.dumps(data["votes"], separators=(",", ":")),
            "voters": json.dumps(approvals) if approvals else "[]",
            "escalated": str(self.escalation_step or int(self.escalated)),
            **present(
                message_ts=self.message_ts or "",
                thread_ts=self.thread_ts or "",
                permalink=self.permalink or "",
                asked_in=self.asked_in or "",
                decided_by=self.decided_by or "",
                decided_at=ms(self.decided_at),
                decision=json.dumps(data["decision"]) if self.decision is not None else "",
                escalation_channel=self.escalation_channel or "",
                escalation_ts=self.escalation_ts or "",
                superseded_by=self.superseded_by or "",
                run_withdrawn_by=self.run_withdrawn_by or "",
                run_lost=self.run_lost or "",
                batch=self.batch or "",
                batch_items=json.dumps(self.batch_items) if self.batch_items else "",
                escalation_cards=json.dumps(self.escalation_cards) if self.escalation_cards else "",
                escalation_posted=str(self.escalation_posted or ""),
                post_error=self.post_error or "",
                trust_grant=self.trust_grant or "",
                escalation_error=self.escalation_error or "",
            ),
            **held_fields(self.held),
            **undone_fields(self.undone),
        }

    @classmethod
    def from_json(cls, key: str, text: str) -> InterruptRecord:
        """Validate a hash a script returned as one JSON object (one reply, not a flat list)."""
        try:
            fields = json.loads(text)
        except ValueError as exc:
            raise CorruptRecordError(key, what_is_wrong(exc)) from exc
        if not isinstance(fields, dict):
            raise CorruptRecordError(key, "not a JSON object")
        return cls.from_hash(key, fields)

    @classmethod
    def from_hash(cls, key: str, fields: dict[str, str]) -> InterruptRecord:
        """Validate a hash read back from Redis; CorruptRecordError names the key if bad."""
        try:

            def opt_ms(name: str) -> datetime | None:
                raw = fields.get(name, "")
                return from_ms(int(raw)) if raw else None

            def opt(name: str) -> str | None:
                return fields.get(name) or None

            record = cls(
                interrupt=json.loads(fields["interrupt"]),
                run_id=fields["run_id"],
                thread_id=fields["thread_id"],
                agent=fields["agent"],
                requested_by=fields["requested_by"],
                policy=stored_policy(fields["policy"]),
                args_digest=fields["args_digest"],
                created_at=from_ms(int(fields["created_at"])),
                expires_at=opt_ms("expires_at"),
                next_reminder_at=opt_ms("next_reminder_at"),
                channel=opt("channel"),
                message_ts=opt("message_ts"),
                thread_ts=opt("thread_ts"),
                permalink=opt("permalink"),
                asked_in=opt("asked_in"),
                state=fields["state"],  # type: ignore[arg-type]
                votes=tuple(Vote.model_validate(v) for v in json.loads(fields["votes"])),
                decided_by=opt("decided_by"),
                decided_at=opt_ms("decided_at"),
                decision=json.loads(fields["decision"]) if fields.get("decision") else None,
                escalated=escalation_step(fields) >= 1,
                escalation_step=escalation_step(fields),
                escalation_cards=tuple(
                    (str(c), str(t)) for c, t in json.loads(fields.get("escalation_cards") or "[]")
                ),
                escalation_posted=posted_step(fields),
                escalation_channel=opt("escalation_channel"),
                escalation_ts=opt("escalation_ts"),
                reminders_sent=int(fields.get("reminder_index") or 0),
                superseded_by=opt("superseded_by"),
                run_withdrawn_by=opt("run_withdrawn_by"),
                run_lost=opt("run_lost"),
                batch=opt("batch"),
                batch_items=tuple(json.loads(fields.get("batch_items") or "[]")),
                post_error=opt("post_error"),
                trust_grant=opt("trust_grant"),
                escalation_error=opt("escalation_error"),
                held=read_held(fields),
                undone=read_undone(fields),
            )
        except (KeyError, ValueError, TypeError, ValidationError) as exc:
            raise CorruptRecordError(key, what_is_wrong(exc)) from exc
        if record.id != fields.get("id"):
            raise CorruptRecordError(key, "its id field does not match its key")
        return record
