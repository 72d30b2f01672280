"""A Strands resume that fails after the approved tool ran is retried from the interrupt:
the retry gets the saved result instead of running the tool again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from harness import ALICE, CAROL, Harness
from strands import Agent, tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry
from strands.vended_interventions.hitl import HumanInTheLoop
from strands_agents import (
    FailsOnceAfterTheTool,
    ScriptedModel,
    failing_after_the_tool,
    gated_spec,
)

from agent_runtime import Decision
from agent_runtime.errors import ResumeError
from agent_runtime.run_events import RunFinished, ToolCallFinished
from bot.runs.recovery import catch_up
from signoff.strands import SignoffApprovals, StrandsAgent
from storage import Storage
from storage.errors import StorageUnavailableError


async def test_a_resume_retried_after_the_tool_ran_gets_its_result_without_running_it_again(
    storage: Storage,
) -> None:
    ran: list[list[str]] = []
    agent = StrandsAgent(failing_after_the_tool(ran), session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_retried")).interrupts
    decision = {asked.id: Decision.approve()}
    with pytest.raises(Exception, match="the model is unreachable"):
        await agent.invoke(decision, thread_id="thread_retried")
    assert ran == [["/tmp/a"]]
    status = await agent.thread_status("thread_retried")
    assert status is not None and [i.id for i in status.interrupts] == [asked.id]

    done = await agent.invoke(decision, thread_id="thread_retried")  # the worker's retry
    assert done.message == "done (success): deleted 1"
    assert ran == [["/tmp/a"]]
    status = await agent.thread_status("thread_retried")
    assert status is not None and status.status == "idle"
    stored = await storage.sessions.load("thread_retried")
    assert stored is not None and "kept" not in stored.snapshot


async def test_a_retry_with_another_answer_after_the_tool_ran_is_told_it_ran(
    storage: Storage,
) -> None:
    """An app (no cards) whose resume failed after the approved tool ran, retrying with a
    denial, is told the tool ran and on which answer; that answer then goes on."""
    ran: list[list[str]] = []
    agent = StrandsAgent(failing_after_the_tool(ran), session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_changed")).interrupts
    with pytest.raises(Exception, match="the model is unreachable"):
        await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_changed")
    before = await storage.sessions.load("thread_changed")

    with pytest.raises(ResumeError) as refused:
        await agent.invoke({asked.id: Decision.reject("no")}, thread_id="thread_changed")
    assert f"{asked.id} delete_files (it ran): approve" in str(refused.value)
    assert await storage.sessions.load("thread_changed") == before  # nothing changed
    done = await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_changed")
    assert done.message == "done (success): deleted 1"
    assert ran == [["/tmp/a"]]


async def test_a_call_strands_human_in_the_loop_denied_is_not_taken_for_started_by_a_retry(
    storage: Storage,
) -> None:
    """The intervention decides after the agent's own hooks: a call it denied did not
    start, so a retry of the failed resume with another answer is not refused as if the
    tool had (nothing ran), and runs the tool once."""
    ran: list[list[str]] = []
    model = FailsOnceAfterTheTool()

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        ran.append(paths)
        return f"deleted {len(paths)}"

    def make_agent() -> Agent:
        return Agent(
            model=model,
            tools=[delete_files],
            interventions=[HumanInTheLoop()],
            callback_handler=None,
        )

    agent = StrandsAgent(make_agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_hitl_denied")).interrupts
    with pytest.raises(Exception, match="the model is unreachable"):
        await agent.invoke({asked.id: Decision.reject("no")}, thread_id="thread_hitl_denied")
    done = await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_hitl_denied")
    assert done.message == "done (success): deleted 1"
    assert ran == [["/tmp/a"]]


async def test_withdrawing_after_a_resume_failed_past_the_tool_keeps_the_tools_result(
    storage: Storage,
) -> None:
    ran: list[list[str]] = []
    agent = StrandsAgent(failing_after_the_tool(ran), session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_withdrawn")).interrupts
    with pytest.raises(Exception, match="the model is unreachable"):
        await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_withdrawn")
    await agent.cancel("thread_withdrawn", "withdrawn")
    stored = await storage.sessions.load("thread_withdrawn")
    assert stored is not None
    [closing, _] = stored.snapshot["strands"]["data"]["messages"][-2:]  # type: ignore[call-overload, index]
    assert closing["content"][0]["toolResult"]["content"] == [{"text": "deleted 1"}]
    assert ran == [["/tmp/a"]]


async def test_a_tool_a_hook_retried_is_kept_as_its_last_attempt(storage: Storage) -> None:
    attempts: list[int] = []

    class RetryOnError(HookProvider):
        """Retries a tool call that failed, once (a hook of the agent's own)."""

        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(AfterToolCallEvent, self.retry)

        def retry(self, event: AfterToolCallEvent) -> None:
            if event.result.get("status") == "error" and len(attempts) < 2:
                event.retry = True

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("disk busy")
        return f"deleted {len(paths)}"

    model = FailsOnceAfterTheTool()

    def make_agent() -> Agent:
        return Agent(
            model=model,
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True}), RetryOnError()],
            callback_handler=None,
        )

    agent = StrandsAgent(make_agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_hook_retry")).interrupts
    decision = {asked.id: Decision.approve()}
    with pytest.raises(Exception, match="the model is unreachable"):
        await agent.invoke(decision, thread_id="thread_hook_retry")
    assert len(attempts) == 2  # failed once, then deleted
    done = await agent.invoke(decision, thread_id="thread_hook_retry")
    assert done.message == "done (success): deleted 1"
    assert len(attempts) == 2


async def test_a_replayed_resume_of_a_strands_round_already_run_is_caught_up(
    make_bot: Any,
) -> None:
    """A resume job that comes again once its round ran (its worker died before
    acknowledging it): the answers are applied, so there is nothing to redo and no
    failure to report."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    await bot.finished()
    posts = len(bot.slack.called("chat.postMessage"))
    [record] = (await bot.services.storage.queries.many([bot.record_id(value)]))[0]
    assert await catch_up(bot.services, [record], thread_id=record.thread_id)
    assert deleted == [["/tmp/a", "/tmp/b"]]
    assert len(bot.slack.called("chat.postMessage")) == posts  # nothing told twice


async def test_a_run_whose_end_was_not_told_before_its_worker_failed_is_told_by_the_retry(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storage fails as the worker marks the run's end (the agent has finished): the
    retried job finds the answers applied and must still tell the run's end, once."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted), reclaim_after=0.05)
    queue = bot.services.storage.resume
    first_end = queue.first_end
    failures = [StorageUnavailableError("Redis went away")]

    async def fails_once(run_id: str) -> bool:
        if failures:
            raise failures.pop()
        return await first_end(run_id)

    monkeypatch.setattr(queue, "first_end", fails_once)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done (success): deleted 2")
    assert failures == [] and deleted == [["/tmp/a", "/tmp/b"]]


async def test_a_tool_whose_process_died_while_it_ran_is_not_run_again_by_the_retry(
    storage: Storage,
) -> None:
    """The approved tool starts and its process dies before its result is saved (the
    resume is cut off inside it): the retry does not start it again (it may have done
    part of its work), tells the model and the thread so, as a failure, and refuses
    other answers, naming the tool as started."""
    started: list[list[str]] = []
    inside, stuck = asyncio.Event(), asyncio.Event()

    @tool
    async def delete_files(paths: list[str]) -> str:
        """Delete files; the first run never returns (its process dies inside it)."""
        started.append(paths)
        if len(started) == 1:
            inside.set()
            await stuck.wait()
        return f"deleted {len(paths)}"

    def make_agent() -> Agent:
        return Agent(
            model=ScriptedModel("delete_files", {"paths": ["/tmp/a"]}),
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    agent = StrandsAgent(make_agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_died")).interrupts
    decision = {asked.id: Decision.approve()}
    dying = asyncio.create_task(agent.invoke(decision, thread_id="thread_died"))
    await asyncio.wait_for(inside.wait(), 10)
    dying.cancel()  # the process dies with the tool running
    with pytest.raises(asyncio.CancelledError):
        await dying
    assert started == [["/tmp/a"]]

    with pytest.raises(ResumeError) as refused:
        await agent.invoke({asked.id: Decision.reject("no")}, thread_id="thread_died")
    assert f"{asked.id} delete_files (it started): approve" in str(refused.value)

    events = [e async for e in agent.stream(decision, thread_id="thread_died")]  # the retry
    assert started == [["/tmp/a"]]
    said = (
        "delete_files was not run again: an earlier try of this resume started it and failed "
        "before its result was saved, so it may have done some or all of its work"
    )
    [told] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert (told.tool_call.name, told.result.content, told.result.is_error) == (
        "delete_files",
        said,
        True,
    )
    [finished] = [e for e in events if isinstance(e, RunFinished)]
    assert finished.result.message == f"done (error): {said}"
