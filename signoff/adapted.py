"""What the adapters of other agent frameworks share: one run id per thread, the
thread's lease around each invocation, where a thread stands read from its snapshot, when
each open interrupt was first asked, how a withdrawn run ends, the tool results a
resume keeps as it goes, and what its tools did for a worker catching it up to tell."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence, Set
from datetime import datetime

from agent_runtime.errors import ResumeError
from agent_runtime.interrupts import Interrupt, InterruptResponse
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import AgentResult, ToolResult, json_safe
from agent_runtime.resume import RunInput
from agent_runtime.run_events import RunEvent, ToolCallFinished
from agent_runtime.runnable import Runnable, ThreadStatus
from agent_runtime.session import SessionStore, StoredSession

_MAX_ID = 128
"""The longest id storage takes (a run's id is part of its records' ids)."""


def run_id_of(thread_id: str) -> str:
    """The run of a thread: one per thread (each run started from Slack has its own). A
    thread id too long to carry whole (an AG-UI app's own) is carried as its digest."""
    run_id = "run_" + thread_id.removeprefix("thread_")
    if len(run_id) <= _MAX_ID:
        return run_id
    return "run_" + hashlib.sha256(thread_id.encode()).hexdigest()


def cancelled(thread_id: str, reason: str) -> AgentResult:
    """How a thread's run ended when its cards were withdrawn."""
    return AgentResult(
        stop_reason="cancelled", message=reason, thread_id=thread_id, run_id=run_id_of(thread_id)
    )


class LeasedInvocation:
    """One invocation of an adapted agent, holding the thread's lease: two resumes of one
    thread at once would both run its next step (and its tool); the second is refused."""

    agent: Runnable
    thread_id: str
    resume_with: str | Sequence[InterruptResponse] | None = None

    async def run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        async with self.agent.session_store.lease(self.thread_id):
            async for event in self._run(input):
                yield event

    def _run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        raise NotImplementedError


def owned(stored: StoredSession | None, kind: str, thread_id: str) -> StoredSession | None:
    """``stored`` when it holds this framework's state (its ``kind`` field), or is None. A
    thread another agent keeps (an AG-UI app's thread id, used with two agents) is refused:
    saving over its state would leave that agent's open cards nothing to resume."""
    if stored is None or kind in stored.snapshot:
        return stored
    raise ResumeError(f"thread {thread_id} is another agent's; give this one a thread of its own")


KEPT = "kept"
"""The snapshot field holding the results of the tools a resume ran, by call id, until
the invocation's own snapshot (which has them) is saved."""


def kept_results(stored: StoredSession) -> dict[str, JSONValue]:
    """The tool results an earlier try of the thread's resume kept, by call id."""
    kept = stored.snapshot.get(KEPT)
    return dict(kept) if isinstance(kept, dict) else {}


STARTED = "started"
"""The snapshot field holding the calls a resume started, each saved before its tool runs:
one started by a try that failed before saving its result may have done part of its work."""


def started_calls(stored: StoredSession) -> set[str]:
    """The calls an earlier try of the thread's resume started, by call id."""
    started = stored.snapshot.get(STARTED)
    return {c for c in started if isinstance(c, str)} if isinstance(started, list) else set()


def not_run_again(tool: str) -> str:
    """The model's answer for a call an earlier try of the resume started and lost."""
    return (
        f"{tool} was not run again: an earlier try of this resume started it and failed "
        "before its result was saved, so it may have done some or all of its work"
    )


ANSWERS = "answers"
"""The snapshot field holding the answers a resume ran tools on, by interrupt id, kept with
their results: a retry with other answers is refused (what ran cannot be undone)."""


def _answer(response: InterruptResponse) -> JSONValue:
    """What of an answer decides what runs: a decision's type and an edit's arguments (its
    reason, its text or a grant to remember it may differ between tries), or the answer
    itself (a tool's own question)."""
    decision = response.decision
    if decision is None:
        return {"type": "answer", "args": response.response}
    return {"type": decision.type, "args": decision.args if decision.type == "edit" else None}


def check_retry(
    stored: StoredSession,
    responses: Sequence[InterruptResponse],
    interrupts: Sequence[Interrupt],
) -> None:
    """Refuse a resume whose answers differ from those an earlier try of it ran tools on
    (it failed after them): the app is told which tools ran and on which answers, so it
    can send those again, and nothing changes."""
    earlier = stored.snapshot.get(ANSWERS)
    kept, started = kept_results(stored), started_calls(stored)
    if not (kept or started) or not isinstance(earlier, dict):
        return
    if {r.interrupt_id: _answer(r) for r in responses} == earlier:
        return
    by_id = {i.id: i for i in interrupts}
    said = []
    for iid, answer in earlier.items():
        call = by_id[iid].tool_call if iid in by_id else None
        ran = ""
        if call is not None and call.id in kept:
            ran = " (it ran)"
        elif call is not None and call.id in started:
            ran = " (it started)"
        said.append(f"{iid}{f' {call.name}' if call else ''}{ran}: {_said(answer)}")
    raise ResumeError(
        "an earlier try of this resume ran tools, then failed; a tool that ran (or started) "
        f"cannot be undone, so resume with the answers it ran on: {'; '.join(said)}"
    )


def _said(answer: JSONValue) -> str:
    """An answer as ``_answer`` keeps it, as text: its type, and what it carries."""
    if not isinstance(answer, dict):
        return json.dumps(answer, ensure_ascii=False)
    args = answer.get("args")
    edited = f" {json.dumps(args, ensure_ascii=False)}" if args is not None else ""
    return f"{answer.get('type')}{edited}"


class KeptResults:
    """The results of the calls a resume runs, each saved in the thread's snapshot as it
    returns, with the resume's answers: a retried resume answers those calls from them
    instead of running the tools again (an approved call runs once even when the model
    fails after it), and a retry with other answers is refused (``check_retry``)."""

    def __init__(
        self,
        store: SessionStore,
        thread_id: str,
        stored: StoredSession,
        responses: Sequence[InterruptResponse],
    ) -> None:
        self.store, self.thread_id, self.stored = store, thread_id, stored
        self.version = stored.version
        self.kept = kept_results(stored)
        self.started = started_calls(stored)
        self.answers = {r.interrupt_id: _answer(r) for r in responses}
        self._saving = asyncio.Lock()  # tools run concurrently save one after the other

    async def start(self, call_id: str) -> None:
        """Save that the call's tool starts, before it does (see ``STARTED``)."""
        async with self._saving:
            self.started.add(call_id)
            await self._save()

    async def keep(self, call_id: str, result: JSONValue) -> None:
        """Save ``result`` as the call's, before anything else the resume does."""
        async with self._saving:
            self.kept[call_id] = result
            await self._save()

    async def _save(self) -> None:
        snapshot = {
            **self.stored.snapshot,
            KEPT: self.kept,
            STARTED: sorted(self.started),
            ANSWERS: self.answers,
        }
        self.version = await self.store.save(
            self.thread_id, snapshot, expected_version=self.version
        )


IDS = "ids"
"""The snapshot field mapping each open interrupt's framework id to its Signoff id."""


def signoff_ids(
    interrupts: Iterable[Interrupt], previous: StoredSession | None, answered: Set[str]
) -> dict[str, JSONValue]:
    """The Signoff id of each of ``interrupts`` (framework ids), for the thread's next
    snapshot: as ``previous`` has it for one left unanswered, else its framework id marked
    with the version the invocation started from. A framework may give a later round's
    interrupt an answered one's id (its tool call's, which some providers number per
    turn): under that id it would be taken for the decided one, never asked."""
    earlier = _strings(previous.snapshot.get(IDS)) if previous else {}
    version = previous.version if previous else 0
    return {
        i.id: earlier[i.id] if i.id in earlier and i.id not in answered else f"{i.id}.{version}"
        for i in interrupts
    }


def named(
    interrupts: Iterable[Interrupt], snapshot: Mapping[str, JSONValue]
) -> tuple[Interrupt, ...]:
    """``interrupts`` under the Signoff ids ``snapshot`` gives them (a thread saved before
    they had their own keeps the framework's)."""
    ids = _strings(snapshot.get(IDS))
    return tuple(dataclasses.replace(i, id=ids.get(i.id, i.id)) for i in interrupts)


ASKED_AT = "asked_at"
"""The snapshot field mapping each open interrupt's id to when it was first asked."""


def asked_at(
    interrupts: Iterable[Interrupt], previous: StoredSession | None
) -> dict[str, JSONValue]:
    """When each of ``interrupts`` was first asked, for the thread's next snapshot: as the
    ``previous`` snapshot has it for one still open, else as the interrupt has it (now)."""
    earlier = _asked(previous.snapshot) if previous else {}
    return {i.id: earlier.get(i.id, i.created_at.isoformat()) for i in interrupts}


def dated(
    interrupts: Iterable[Interrupt], snapshot: Mapping[str, JSONValue]
) -> tuple[Interrupt, ...]:
    """``interrupts``, each with the time it was first asked where ``snapshot`` has it: a
    framework rebuilds its interrupts on each read, and an expiry counts from this time."""
    asked = _asked(snapshot)
    return tuple(
        dataclasses.replace(i, created_at=datetime.fromisoformat(asked[i.id]))
        if i.id in asked
        else i
        for i in interrupts
    )


def _asked(snapshot: Mapping[str, JSONValue]) -> dict[str, str]:
    return _strings(snapshot.get(ASKED_AT))


def _strings(field: JSONValue | None) -> dict[str, str]:
    if not isinstance(field, dict):
        return {}
    return {key: value for key, value in field.items() if isinstance(value, str)}


RESULT = "result"
"""The snapshot field holding the last words of a thread's run that ended: a worker
catching up a run whose worker failed before telling its end tells it."""


def last_result(thread_id: str, snapshot: Mapping[str, JSONValue]) -> AgentResult | None:
    """How the thread's run ended, where ``snapshot`` says it did."""
    message = snapshot.get(RESULT)
    if not isinstance(message, str):
        return None
    return AgentResult(
        stop_reason="end_turn", message=message, thread_id=thread_id, run_id=run_id_of(thread_id)
    )


RAN = "ran"
"""The snapshot field holding what each tool the thread's last invocation ran did, in
order: a worker catching up a run whose worker failed before telling them tells them."""


def ran(finished: Iterable[ToolCallFinished]) -> list[JSONValue]:
    """What ``finished`` tools did, for the snapshot's ``RAN`` field (as JSON: a model's
    arguments may hold NaN, which its framework's parser reads)."""
    return [
        json_safe({"call": f.tool_call.to_dict(), "result": f.result.to_dict()}) for f in finished
    ]


def tool_results(snapshot: Mapping[str, JSONValue]) -> tuple[tuple[ToolCall, ToolResult], ...]:
    """Each call the thread's last invocation ran, with its result, as ``snapshot`` has them
    (``ThreadStatus.tool_results``)."""
    kept = snapshot.get(RAN)
    return tuple(
        (ToolCall.from_dict(r["call"]), ToolResult.from_dict(r["result"]))
        for r in (kept if isinstance(kept, list) else ())
        if isinstance(r, dict)
        and isinstance(r.get("call"), dict)
        and isinstance(r.get("result"), dict)
    )


async def snapshot_status(
    store: SessionStore,
    thread_id: str,
    kind: str,
    interrupts_of: Callable[[StoredSession], Sequence[Interrupt]],
) -> ThreadStatus | None:
    """Where a thread whose agent keeps its state in ``store`` (under ``kind``) stands;
    None for a thread it does not keep."""
    stored = await store.load(thread_id)
    if stored is None or kind not in stored.snapshot:
        return None
    interrupts = dated(named(interrupts_of(stored), stored.snapshot), stored.snapshot)
    return ThreadStatus(
        thread_id=thread_id,
        run_id=run_id_of(thread_id),
        status="interrupted" if interrupts else "idle",
        version=stored.version,
        interrupts=interrupts,
        last_result=None if interrupts else last_result(thread_id, stored.snapshot),
        tool_results=tool_results(stored.snapshot),
    )
