"""Remembered decisions: a human's "trust this" that spares them the same question again."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from .interrupts import Decision, RememberScope
from .messages import JSONValue, ToolCall, args_digest


@dataclass(frozen=True, kw_only=True)
class Trust:
    """A decision that stands for later calls of ``tool`` (optionally only the same args,
    acting on what the approver was shown: ``acts_on_digest``, a precondition's answer)."""

    tool: str
    decision: Decision
    scope: RememberScope
    run_id: str
    args_digest: str | None = None
    acts_on_digest: str | None = None
    expires_at: float | None = None

    def covers(self, call: ToolCall, *, run_id: str, now: float, acts_on: JSONValue = None) -> bool:
        if call.name != self.tool:
            return False
        if self.args_digest is not None and self.args_digest != args_digest(call.args):
            return False
        if self.acts_on_digest is not None and self.acts_on_digest != _acts_on_digest(acts_on):
            return False
        if self.scope == "run":
            return run_id == self.run_id
        if self.scope == "minutes":
            return self.expires_at is not None and now < self.expires_at
        return True

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "tool": self.tool,
            "decision": self.decision.to_dict(),
            "scope": self.scope,
            "run_id": self.run_id,
            "args_digest": self.args_digest,
            "acts_on_digest": self.acts_on_digest,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Trust:
        return cls(
            tool=str(data["tool"]),
            decision=Decision.from_dict(data["decision"]),
            scope=data["scope"],
            run_id=str(data["run_id"]),
            args_digest=data.get("args_digest"),
            acts_on_digest=data.get("acts_on_digest"),
            expires_at=data.get("expires_at"),
        )


class TrustLedger:
    """The thread's remembered decisions; run-scoped ones are dropped when the run ends."""

    def __init__(self, trusts: list[Trust] | None = None) -> None:
        self.trusts: list[Trust] = list(trusts or [])

    def find(
        self,
        call: ToolCall,
        *,
        run_id: str,
        now: float | None = None,
        acts_on: JSONValue = None,
    ) -> Decision | None:
        """The remembered decision covering ``call`` acting on ``acts_on``, if any."""
        moment = time.time() if now is None else now
        for trust in reversed(self.trusts):
            if trust.covers(call, run_id=run_id, now=moment, acts_on=acts_on):
                return trust.decision
        return None

    def remember(
        self,
        call: ToolCall,
        decision: Decision,
        *,
        run_id: str,
        now: float | None = None,
        acts_on: JSONValue = None,
    ) -> None:
        """Record ``decision`` for its ``remember`` scope; a decision without one is ignored.

        An edit is remembered as an approval: its arguments were written for this call,
        and must never replace those of the later calls the trust lets through. With
        ``same_args`` it covers the edited arguments, the ones the approver approved, and
        only acting on ``acts_on`` (the precondition's answer the card showed), if given."""
        remember = decision.remember
        if remember is None:
            return
        trusted = call.args
        if decision.type == "edit":
            trusted = call.args if decision.args is None else decision.args
            decision = Decision.approve(remember=remember)
        moment = time.time() if now is None else now
        trust = Trust(
            tool=call.name,
            decision=decision,
            scope=remember.scope,
            run_id=run_id,
            args_digest=args_digest(trusted) if remember.same_args else None,
            acts_on_digest=_acts_on_digest(acts_on)
            if remember.same_args and acts_on is not None
            else None,
            expires_at=moment + 60 * remember.minutes if remember.minutes else None,
        )
        # A replayed hook remembers the same answer again: keep one copy.
        if not any(_same_rule(trust, t) for t in self.trusts):
            self.trusts.append(trust)

    def end_run(self, run_id: str, *, now: float | None = None) -> None:
        """Forget decisions scoped to ``run_id`` and those whose time ran out."""
        moment = time.time() if now is None else now
        self.trusts = [
            t
            for t in self.trusts
            if not (t.scope == "run" and t.run_id == run_id)
            and not (t.expires_at is not None and t.expires_at <= moment)
        ]


def _same_rule(a: Trust, b: Trust) -> bool:
    return (a.tool, a.decision, a.scope, a.run_id, a.args_digest, a.acts_on_digest) == (
        b.tool,
        b.decision,
        b.scope,
        b.run_id,
        b.args_digest,
        b.acts_on_digest,
    )


def _acts_on_digest(acts_on: JSONValue) -> str:
    return args_digest({"acts_on": acts_on})
