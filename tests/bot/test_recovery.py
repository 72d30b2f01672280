"""A worker killed after the agent saved a checkpoint, before the bot stored and posted what
came next: another worker catches the run up exactly once instead of failing forever."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime import (
    Agent,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolCall,
    Workflow,
    tool,
)
from agent_runtime.session import SessionStore, Snapshot, StoredSession
from bot.agents.policy import AgentSpec, Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.ui import ids


class WorkerKilled(Exception):
    """Stands for the process dying at the point the store was told to fail."""


class DiesAfterSave:
    """A session store that raises right after the first save matching ``when``, as if the
    worker's process died there: the snapshot is saved, nothing after it happens."""

    def __init__(self, inner: SessionStore, when: Callable[[Snapshot], bool]) -> None:
        self.inner = inner
        self.when = when
        self.died = asyncio.Event()

    async def load(self, thread_id: str) -> StoredSession | None:
        return await self.inner.load(thread_id)

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        version = await self.inner.save(thread_id, snapshot, expected_version=expected_version)
        if not self.died.is_set() and self.when(snapshot):
            self.died.set()
            raise WorkerKilled(f"killed after saving version {version}")
        return version

    async def delete(self, thread_id: str) -> None:
        await self.inner.delete(thread_id)


def _interrupt_posts(bot: Harness) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(arguments, answer) of every interrupt message posted (those carrying buttons)."""
    return [
        (c.args, c.answer)
        for c in bot.slack.calls
        if c.method == "chat.postMessage" and "actions" in str(c.args.get("blocks"))
    ]


async def _kill_first_worker(bot: Harness, value: str, when: Callable[[Snapshot], bool]) -> None:
    agent = bot.services.registry.agent("cleanup")
    store = DiesAfterSave(agent.session_store, when)
    agent.session_store = store
    await bot.click(ids.APPROVE, value, user=ALICE)
    await asyncio.wait_for(store.died.wait(), 5)
    await bot.loops.stop()


async def test_next_interrupt_is_stored_and_posted_once_after_the_worker_died(
    make_bot: Any,
) -> None:
    then = ({"paths": ["/tmp/c"]},)
    first: Harness = await make_bot(then=then)
    value = await first.start()
    await _kill_first_worker(first, value, lambda snap: snap["status"] == "interrupted")
    assert first.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert len(_interrupt_posts(first)) == 1  # the second round was saved, never posted

    second: Harness = await make_bot(workers=1, reclaim_after=0.05, then=then)
    await second.slack.wait_for(lambda: len(_interrupt_posts(second)) == 2, what="round two")
    args, answer = _interrupt_posts(second)[-1]
    assert args["thread_ts"] == first.message_ts()
    next_value = args["blocks"][-1]["elements"][0]["value"]
    assert next_value != value

    await second.click(ids.APPROVE, next_value, user=ALICE, message_ts=answer["ts"])
    assert "deleted 1 file(s)" in await second.finished()
    await second.loops.stop()
    assert len(_interrupt_posts(second)) == 2
    assert [t for t in second.thread() if t.startswith("Finished")] == [
        f"Finished: done: deleted 1 file(s)\ncc <@{CAROL}>"
    ]
    assert first.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert second.tool_log.calls == [{"paths": ["/tmp/c"]}]
    assert await second.services.storage.resume.pending_count() == 0


async def test_a_run_that_ended_before_the_worker_died_is_reported_once(make_bot: Any) -> None:
    first: Harness = await make_bot()
    value = await first.start()

    def ended(snap: Snapshot) -> bool:
        return snap["status"] == "idle" and not snap["answers"]

    await _kill_first_worker(first, value, ended)
    assert first.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert not any(t.startswith("Finished") for t in first.thread())

    second: Harness = await make_bot(workers=1, reclaim_after=0.05)
    assert await second.finished() == f"Finished: done: deleted 2 file(s)\ncc <@{CAROL}>"
    await second.loops.stop()
    assert [t for t in second.thread() if t.startswith("Finished")] == [
        f"Finished: done: deleted 2 file(s)\ncc <@{CAROL}>"
    ]
    assert second.tool_log.calls == []
    assert await second.services.storage.resume.pending_count() == 0
    assert await _tool_audits(second) == ["tool_ran delete_files: deleted 2 file(s)"]  # once
    assert second.thread().count("delete_files: deleted 2 file(s)") == 1


async def test_a_run_cut_off_mid_way_is_continued_from_its_checkpoint(make_bot: Any) -> None:
    first: Harness = await make_bot()
    value = await first.start()

    def tool_result_saved(snap: Snapshot) -> bool:
        return snap["status"] == "running" and any(m["role"] == "tool" for m in snap["messages"])

    await _kill_first_worker(first, value, tool_result_saved)
    assert first.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]

    second: Harness = await make_bot(workers=1, reclaim_after=0.05)
    assert await second.finished() == f"Finished: done: deleted 2 file(s)\ncc <@{CAROL}>"
    await second.loops.stop()
    assert second.tool_log.calls == []  # the tool's saved result is not redone
    assert await second.services.storage.resume.pending_count() == 0
    # What the tool did is told once, by the worker that caught the run up.
    assert await _tool_audits(second) == ["tool_ran delete_files: deleted 2 file(s)"]
    assert second.thread().count("delete_files: deleted 2 file(s)") == 1


async def _tool_audits(bot: Harness) -> list[str]:
    entries = await bot.services.storage.audit.read(count=1000)
    return [f"{e.event} {e.detail}" for e in entries if e.event.startswith("tool_")]


async def test_a_worker_that_died_after_announcing_the_end_is_not_echoed(make_bot: Any) -> None:
    first: Harness = await make_bot()
    value = await first.start()
    queue = first.services.storage.resume
    died = asyncio.Event()

    async def dies_before_completing(*args: Any, **kwargs: Any) -> None:
        died.set()
        raise WorkerKilled("killed after the thread post, before the job was completed")

    queue.complete = dies_before_completing  # type: ignore[method-assign]
    await first.click(ids.APPROVE, value, user=ALICE)
    await asyncio.wait_for(died.wait(), 5)
    await first.loops.stop()
    assert [t for t in first.thread() if t.startswith("Finished")] == [
        f"Finished: done: deleted 2 file(s)\ncc <@{CAROL}>"
    ]

    caught_up, release = asyncio.Event(), queue.release

    async def released(*args: Any, **kwargs: Any) -> None:
        await release(*args, **kwargs)  # the last step of a caught-up job
        caught_up.set()

    queue.release = released  # type: ignore[method-assign]
    second: Harness = await make_bot(workers=1, reclaim_after=0.05)
    await asyncio.wait_for(caught_up.wait(), 10)
    await second.loops.stop()
    assert await queue.pending_count() == 0
    assert [t for t in second.thread() if t.startswith("Finished")] == [
        f"Finished: done: deleted 2 file(s)\ncc <@{CAROL}>"
    ]
    assert second.tool_log.calls == []


async def test_a_worker_that_died_after_auditing_a_tool_is_not_echoed(make_bot: Any) -> None:
    """It posted the tool's outcome, audited it, then died: the worker catching the run up
    tells neither again."""
    first: Harness = await make_bot()
    value = await first.start()
    audit = first.services.storage.audit  # both bots share one storage
    append_once, died = audit.append_once, asyncio.Event()

    async def dies_after(entry: Any, *, once: str) -> Any:
        appended = await append_once(entry, once=once)
        if died.is_set():
            return appended
        died.set()
        raise WorkerKilled("killed once the tool's outcome was audited")

    audit.append_once = dies_after  # type: ignore[method-assign]
    await first.click(ids.APPROVE, value, user=ALICE)
    await asyncio.wait_for(died.wait(), 5)
    await first.loops.stop()

    second: Harness = await make_bot(workers=1, reclaim_after=0.05)
    await second.finished()
    await second.loops.stop()
    assert await _tool_audits(second) == ["tool_ran delete_files: deleted 2 file(s)"]
    assert first.thread().count("delete_files: deleted 2 file(s)") == 1


async def test_an_approved_tool_the_catching_up_worker_runs_is_audited_with_its_record(
    make_bot: Any,
) -> None:
    """The worker died once the tool's start was saved, before it ran."""
    first: Harness = await make_bot()
    value = await first.start()

    def about_to_run(snap: Snapshot) -> bool:
        return snap["status"] == "running" and bool(snap["attempts"])

    await _kill_first_worker(first, value, about_to_run)
    assert first.tool_log.calls == []
    second: Harness = await make_bot(workers=1, reclaim_after=0.05)
    await second.finished()
    await second.loops.stop()
    entries = await second.services.storage.audit.read(count=1000)
    [ran] = [e for e in entries if e.event == "tool_ran"]
    assert ran.record_id == first.record_id(value)


async def test_two_agent_nodes_of_a_workflow_calling_alike_are_both_audited(
    make_bot: Any,
) -> None:
    """Each node's agent runs on a thread of its own, where a provider that numbers its
    calls per response gives both calls the same id."""
    ran: list[str] = []

    @tool
    def purge(path: str) -> str:
        """Purge a directory."""
        ran.append(path)
        return f"purged {path}"

    def node(path: str) -> Agent:
        turns = [[ToolCall(id="call_0", name="purge", args={"path": path})], "ok"]
        return Agent(model=ScriptedModel(turns), tools=[purge])

    def build(store: SessionStore) -> Workflow:
        return Workflow(nodes={"one": node("/a"), "two": node("/b")}, session_store=store)

    spec = AgentSpec(name="two", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))
    bot: Harness = await make_bot(spec=spec)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=ALICE)
    assert (await start_run(bot.services, "two", "go", place=place)).stop_reason == "end_turn"
    assert ran == ["/a", "/b"]
    assert await _tool_audits(bot) == ["tool_ran purge: purged /a", "tool_ran purge: purged /b"]


class DeleteThenNotify:
    """Asks for delete_files (guarded), then notify (not guarded), then is done."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        told = [m for m in request.messages if m.role == "tool"]
        if not told:
            call = ToolCall(id="call_1", name="delete_files", args={"paths": ["/a"]})
            return ModelResponse(tool_calls=(call,))
        if len(told) == 1:
            call = ToolCall(id="call_2", name="notify", args={"who": "ops"})
            return ModelResponse(tool_calls=(call,))
        return ModelResponse(text=f"done: {told[-1].content}")


def _delete_then_notify() -> AgentSpec:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return f"deleted {len(paths)} file(s)"

    @tool
    def notify(who: str) -> str:
        """Tell someone."""
        return f"told {who}"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=DeleteThenNotify(),
            tools=[delete_files, notify],
            interrupt_on={"delete_files": True},
            session_store=store,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def test_a_tool_that_ran_unasked_before_the_worker_died_is_told_once(
    make_bot: Any,
) -> None:
    """After the approved call, the agent ran an unguarded one; the worker died once its
    result was saved, before telling it."""
    first: Harness = await make_bot(spec=_delete_then_notify())
    value = await first.start(requested_by=CAROL)

    def notify_saved(snap: Snapshot) -> bool:
        told = [m for m in snap["messages"] if m["role"] == "tool"]
        return snap["status"] == "running" and len(told) == 2

    await _kill_first_worker(first, value, notify_saved)
    second: Harness = await make_bot(workers=1, reclaim_after=0.05, spec=_delete_then_notify())
    assert (await second.finished()).startswith("Finished: done: told ops")
    await second.loops.stop()
    assert await _tool_audits(second) == [
        "tool_ran delete_files: deleted 1 file(s)",
        "tool_ran notify: told ops",
    ]
    assert second.thread().count("notify: told ops") == 1


async def test_a_workflows_guarded_agent_node_keeps_its_run_in_the_bots_store(
    make_bot: Any,
) -> None:
    """An agent node saves its run under ``<workflow thread>/<node>`` in the bot's Redis
    store, so its card is posted, and the approval resumes it (in any worker)."""
    bot: Harness = await make_bot(spec=_purge_workflow())
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert await bot.finished() == f"Finished: done: purged /a\ncc <@{CAROL}>"


def _purge_workflow(ran: list[str] | None = None) -> AgentSpec:
    """A workflow whose one node is an agent asking before it purges ``/a``."""

    @tool
    def purge(path: str) -> str:
        """Purge a directory."""
        (ran if ran is not None else []).append(path)
        return f"purged {path}"

    def build(store: SessionStore) -> Workflow:
        model = OneToolModel("purge", {"path": "/a"})
        agent = Agent(model=model, tools=[purge], interrupt_on={"purge": True}, session_store=store)
        return Workflow(nodes={"clean": agent}, session_store=store)

    return AgentSpec(name="wf", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def test_what_a_workflows_agent_node_ran_before_the_worker_died_is_told_once(
    make_bot: Any,
) -> None:
    """The worker died once the agent node saved its approved tool's result, before telling
    it: the worker catching the run up posts and audits it, as for an agent's run."""
    ran: list[str] = []
    spec = _purge_workflow(ran)
    first: Harness = await make_bot(spec=spec)
    value = await first.start()
    node = first.services.registry.agent("wf").nodes["clean"]  # type: ignore[attr-defined]

    def tool_result_saved(snap: Snapshot) -> bool:
        return snap["status"] == "running" and any(m["role"] == "tool" for m in snap["messages"])

    store = node.session_store = DiesAfterSave(node.session_store, tool_result_saved)
    await first.click(ids.APPROVE, value, user=ALICE)
    await asyncio.wait_for(store.died.wait(), 5)
    await first.loops.stop()
    assert ran == ["/a"]

    second: Harness = await make_bot(workers=1, reclaim_after=0.05, spec=spec)
    assert await second.finished() == f"Finished: done: purged /a\ncc <@{CAROL}>"
    await second.loops.stop()
    assert ran == ["/a"]
    assert await _tool_audits(second) == ["tool_ran purge: purged /a"]
    assert second.thread().count("purge: purged /a") == 1
