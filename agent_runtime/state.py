"""A thread's whole state between steps, and its JSON snapshot."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from .interrupts import Interrupt, InterruptResponse
from .messages import JSONValue, Message, ToolCall, new_id
from .results import AgentResult, StopReason, ToolResult
from .session import Snapshot
from .trust import Trust, TrustLedger

SNAPSHOT_FORMAT = 1
RunStatus = Literal["idle", "running", "interrupted"]
"""idle: no run, or the last one ended; running: a run is between checkpoints; interrupted:
waiting on humans."""


@dataclass(kw_only=True)
class RunInfo:
    """What hooks and tools may read of the current run; ``state`` is the app's own data."""

    thread_id: str
    run_id: str
    state: dict[str, JSONValue]
    trusts: TrustLedger


@dataclass(frozen=True, kw_only=True)
class PendingInterrupt:
    """An open interrupt and the tool call, batch or node (``source_id``) that raised it."""

    source_id: str
    interrupt: Interrupt


@dataclass(frozen=True, kw_only=True)
class Answer:
    """A human's answer, kept until the run ends so replayed code finds it.

    ``new_input`` is set when a person edited the arguments of a tool's own interrupt: the
    tool runs again from the top with them.
    """

    source_id: str
    response: InterruptResponse
    new_input: dict[str, JSONValue] | None = None
    asked: JSONValue = None
    """The reason the interrupt was raised with: what the human was shown when they
    answered, so replayed code can compare it with what is true now."""


@dataclass(kw_only=True)
class RunState:
    """Everything needed to continue a thread in another process.

    ``batch`` holds the current model turn's tool calls until every one has a result in
    ``batch_results``; only then are the tool messages appended, so the history never
    shows a tool call without its result. ``attempts`` counts, per tool call or workflow
    node, the times it was started without its result being saved: saved before it starts,
    so a run resumed after a crash knows which side effects may already have happened.
    """

    thread_id: str
    run_id: str = ""
    status: RunStatus = "idle"
    steps: int = 0
    messages: list[Message] = field(default_factory=list)
    batch: list[ToolCall] | None = None
    batch_results: dict[str, ToolResult] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    pending: list[PendingInterrupt] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    app_state: dict[str, JSONValue] = field(default_factory=dict)
    trusts: TrustLedger = field(default_factory=TrustLedger)
    last_result: AgentResult | None = None
    open_before: dict[str, datetime] = field(default_factory=dict)
    """When each interrupt open before this resume was first asked (not saved: the
    interrupts themselves keep it): one asked again keeps its time, and so its expiry."""

    def hold(self, source_id: str, interrupts: Iterable[Interrupt]) -> None:
        """Keep ``interrupts`` open, each dated when it was first asked."""
        for asked in interrupts:
            first = self.open_before.get(asked.id)
            if first is not None:
                asked = replace(asked, created_at=first)
            self.pending.append(PendingInterrupt(source_id=source_id, interrupt=asked))

    def start_run(self) -> None:
        """Begin a new run on this thread (a new prompt, not a resume)."""
        self.trusts.end_run(self.run_id)
        self.run_id = new_id("run")
        self.status = "idle"
        self.steps = 0
        self.batch = None
        self.batch_results = {}
        self.attempts = {}
        self.pending = []
        self.answers = {}

    def run_info(self) -> RunInfo:
        return RunInfo(
            thread_id=self.thread_id, run_id=self.run_id, state=self.app_state, trusts=self.trusts
        )

    def wait_for_humans(self) -> AgentResult:
        """Stop the run on its pending interrupts; returns (and keeps) the result."""
        self.status = "interrupted"
        return self._keep_result("interrupt", "waiting for a human decision")

    def cancel(self, message: str) -> AgentResult:
        """End a run waiting on humans as ``cancelled``: nothing it waits on will run.

        Tool calls of the open batch without a result get ``message`` as an error result,
        so the history never shows a tool call without one."""
        for call in self.batch or ():
            result = self.batch_results.get(call.id) or ToolResult(content=message, is_error=True)
            self.messages.append(
                Message(
                    role="tool",
                    content=result.as_text(),
                    tool_call_id=call.id,
                    is_error=result.is_error,
                )
            )
        self.pending = []
        return self.end_run("cancelled", message)

    def end_run(self, stop_reason: StopReason, message: str) -> AgentResult:
        """End the run: forget its answers, batch and run-scoped trusts; returns the result."""
        self.status = "idle"
        self.batch = None
        self.batch_results = {}
        self.attempts = {}
        self.answers = {}
        self.trusts.end_run(self.run_id)
        return self._keep_result(stop_reason, message)

    def _keep_result(self, stop_reason: StopReason, message: str) -> AgentResult:
        self.last_result = AgentResult(
            stop_reason=stop_reason,
            message=message,
            thread_id=self.thread_id,
            run_id=self.run_id,
            interrupts=tuple(p.interrupt for p in self.pending),
        )
        return self.last_result

    def start_attempts(self, ids: list[str]) -> None:
        """Count one more start of each call or node in ``ids`` (saved before they run)."""
        for key in ids:
            self.attempts[key] = self.attempts.get(key, 0) + 1

    def idempotency_key(self, call_id: str) -> str:
        """A key for ``call_id`` that every attempt of it shares, in any process."""
        return f"{self.run_id}:{call_id}"

    def responses(self) -> dict[str, InterruptResponse]:
        return {iid: answer.response for iid, answer in self.answers.items()}

    def asked(self) -> dict[str, JSONValue]:
        """What each answered interrupt showed (its reason), by interrupt id."""
        return {iid: answer.asked for iid, answer in self.answers.items()}

    def answers_from(self, source_id: str) -> list[InterruptResponse]:
        return [a.response for a in self.answers.values() if a.source_id == source_id]

    def edited_input(self, call_id: str) -> dict[str, JSONValue] | None:
        """The arguments a person last gave tool call ``call_id`` through its own interrupt."""
        edits = [a.new_input for a in self.answers.values() if a.source_id == call_id]
        return next((e for e in reversed(edits) if e is not None), None)

    def own_edit_is_latest(self, call_id: str) -> bool:
        """Whether the latest edit of ``call_id``'s arguments came through its own interrupt,
        after any edit of its approval (which a hook applies again on replay)."""
        for answer in reversed(self.answers.values()):
            if answer.source_id != call_id:
                continue
            if answer.new_input is not None:
                return True
            decision = answer.response.decision
            if decision is not None and decision.type == "edit":
                return False
        return False

    def to_snapshot(self) -> Snapshot:
        return {
            "format": SNAPSHOT_FORMAT,
            "thread_id": self.thread_id,
            "run_id": self.run_id,
            "status": self.status,
            "steps": self.steps,
            "messages": [m.to_dict() for m in self.messages],
            "batch": None if self.batch is None else [c.to_dict() for c in self.batch],
            "batch_results": {k: r.to_dict() for k, r in self.batch_results.items()},
            "attempts": dict(self.attempts),
            "pending": [
                {"source_id": p.source_id, "interrupt": p.interrupt.to_dict()} for p in self.pending
            ],
            "answers": {
                iid: {"source_id": a.source_id, "response": a.response.to_dict()}
                | ({"new_input": a.new_input} if a.new_input is not None else {})
                | ({"asked": a.asked} if a.asked is not None else {})
                for iid, a in self.answers.items()
            },
            "app_state": self.app_state,
            "trusts": [t.to_dict() for t in self.trusts.trusts],
            "last_result": self.last_result.to_dict() if self.last_result else None,
        }

    @classmethod
    def from_snapshot(cls, data: Snapshot) -> RunState:
        batch = data.get("batch")
        return cls(
            thread_id=data["thread_id"],
            run_id=data["run_id"],
            status=data["status"],
            steps=data["steps"],
            messages=[Message.from_dict(m) for m in data["messages"]],
            batch=None if batch is None else [ToolCall.from_dict(c) for c in batch],
            batch_results={k: ToolResult.from_dict(r) for k, r in data["batch_results"].items()},
            attempts={str(k): int(n) for k, n in (data.get("attempts") or {}).items()},
            pending=[
                PendingInterrupt(
                    source_id=p["source_id"], interrupt=Interrupt.from_dict(p["interrupt"])
                )
                for p in data["pending"]
            ],
            answers={
                iid: Answer(
                    source_id=a["source_id"],
                    response=InterruptResponse.from_dict(a["response"]),
                    new_input=a.get("new_input"),
                    asked=a.get("asked"),
                )
                for iid, a in data["answers"].items()
            },
            app_state=dict(data.get("app_state") or {}),
            trusts=TrustLedger([Trust.from_dict(t) for t in data.get("trusts") or ()]),
            last_result=AgentResult.from_dict(data["last_result"])
            if data.get("last_result")
            else None,
        )
