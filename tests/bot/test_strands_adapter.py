"""The real strands-agents SDK (a scripted model, offline) as a Signoff agent: the gate's
interrupts, Strands' own HumanInTheLoop intervention and a tool's own
``tool_context.interrupt`` are cards, and each decision through the real Bolt app
resumes the agent with ``interruptResponse``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from adapter_checks import first_telling_dies, interrupts_keep_their_time, tool_audits
from harness import ALICE, CAROL, CHANNEL, Harness
from strands import Agent, ToolContext, tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry
from strands.models.model import Model
from strands.session import SnapshotSessionManager
from strands.vended_interventions.hitl import HumanInTheLoop

from agent_runtime import Decision
from agent_runtime.errors import ResumeError, ThreadBusyError
from bot.agents.policy import AgentSpec, Policy
from bot.runs.recovery import catch_up
from bot.ui import ids
from signoff.strands import SignoffApprovals, StrandsAgent
from signoff.strands_storage import RedisStorage
from storage import Storage
from storage.errors import StorageUnavailableError


class ScriptedModel(Model):
    """Calls ``tool_name`` once, then reports the tool's result."""

    def __init__(self, tool_name: str, args: dict[str, Any]) -> None:
        self.tool_name, self.args = tool_name, args

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError
        yield

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = [c["toolResult"] for m in messages for c in m["content"] if "toolResult" in c]
        yield {"messageStart": {"role": "assistant"}}
        if not results:
            use = {"toolUseId": "use_1", "name": self.tool_name}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(self.args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        text = results[-1]["content"][0].get("text", "")
        yield {"contentBlockDelta": {"delta": {"text": f"done ({results[-1]['status']}): {text}"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def gated_spec(
    deleted: list[list[str]],
    *,
    name: str = "st-cleanup",
    model: Callable[[], Any] = lambda: ScriptedModel(
        "delete_files", {"paths": ["/tmp/a", "/tmp/b"]}
    ),
    says: Callable[[list[str]], str] = lambda paths: f"deleted {len(paths)}",
) -> AgentSpec:
    """An agent whose ``delete_files`` (noting its paths in ``deleted``, its result what
    ``says`` makes of them) waits for Alice's approval in the channel."""

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return says(paths)

    def make_agent() -> Agent:
        return Agent(
            model=model(),
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    return AgentSpec(
        name=name,
        build=lambda sessions: StrandsAgent(make_agent, session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


@pytest.mark.parametrize(
    ("how", "ran", "says"),
    [
        ("approve", [["/tmp/a", "/tmp/b"]], "done (success): deleted 2"),
        ("edit", [["/tmp/a"]], "done (success): deleted 1"),
        ("reject", [], "done (error): not today"),
        ("respond", [], "done (success): done by hand"),
    ],
)
async def test_each_decision_resumes_the_strands_agent_as_it_says(
    make_bot: Any, how: str, ran: list[list[str]], says: str
) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert card["blocks"][0]["text"]["text"] == "Approval needed: delete_files"
    assert "/tmp/b" in str(card["blocks"])
    await bot.decide(how, value, user=ALICE)
    final = await bot.finished()
    assert final.startswith(f"Finished: {says}"), final
    assert deleted == ran


async def test_a_tools_own_interrupt_is_a_question_whose_answer_the_tool_gets(
    make_bot: Any,
) -> None:
    @tool(context=True)
    def pick_region(tool_context: ToolContext) -> str:
        """Ask which region to clean."""
        return f"cleaning {tool_context.interrupt('region', reason='Which region?')}"

    def make_agent() -> Agent:
        return Agent(
            model=ScriptedModel("pick_region", {}), tools=[pick_region], callback_handler=None
        )

    spec = AgentSpec(
        name="st-question",
        build=lambda sessions: StrandsAgent(make_agent, session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start(requested_by=CAROL)
    assert "Which region?" in str(bot.posted(0)["blocks"])
    status, body = await bot.submit(ids.REPLY_VIEW, value, user=ALICE, text="eu-west")
    assert status == 200 and "errors" not in body, body
    assert (await bot.finished()).startswith("Finished: done (success): cleaning eu-west")


async def test_another_bot_process_resumes_the_strands_agent(make_bot: Any) -> None:
    deleted: list[list[str]] = []
    first: Harness = await make_bot(spec=gated_spec(deleted))
    value = await first.start(requested_by=CAROL)
    await first.loops.stop()  # its state is a snapshot in Redis: another process resumes it
    second: Harness = await make_bot(spec=gated_spec(deleted))
    await second.click(ids.APPROVE, value, user=ALICE)
    assert (await second.finished()).startswith("Finished: done (success): deleted 2")
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_withdrawing_the_card_ends_the_strands_run_and_the_thread_takes_a_new_prompt(
    make_bot: Any,
) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None
    await bot.click(ids.MORE, "", user=CAROL, selected=f"{ids.WITHDRAW} {record.id}")
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>: the run was") for t in bot.thread()),
        what="the cancelled run in the thread",
    )
    agent = bot.services.registry.agent("st-cleanup")
    status = await agent.thread_status(record.thread_id)
    assert status is not None and status.status == "idle"
    again = await agent.invoke("anything else?", thread_id=record.thread_id)
    assert again.stop_reason == "end_turn"
    assert "The request was withdrawn" in again.message  # the tool's result says why
    assert deleted == []


@pytest.mark.parametrize(("how", "ran"), [("approve", [["/tmp/a"]]), ("reject", [])])
async def test_strands_own_human_in_the_loop_intervention_is_an_approval_card(
    make_bot: Any, how: str, ran: list[list[str]]
) -> None:
    deleted: list[list[str]] = []

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return "deleted"

    def make_agent() -> Agent:
        return Agent(
            model=ScriptedModel("delete_files", {"paths": ["/tmp/a"]}),
            tools=[delete_files],
            interventions=[HumanInTheLoop()],
            callback_handler=None,
        )

    spec = AgentSpec(
        name="st-hitl",
        build=lambda sessions: StrandsAgent(make_agent, session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert card["blocks"][0]["text"]["text"] == "Approval needed: delete_files"
    buttons = [e["text"]["text"] for e in card["blocks"][-1]["elements"] if "text" in e]
    assert buttons == ["Approve", "Deny"]  # the intervention's yes or no
    if how == "approve":
        await bot.click(ids.APPROVE, value, user=ALICE)
    else:
        status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="")
        assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert deleted == ran


class SlowDelete:
    """A gated tool that waits inside its body until released, so two resumes of one
    interrupt are both inside it at once unless something stops the second."""

    def __init__(self) -> None:
        self.inside, self.changed, self.release = 0, asyncio.Event(), asyncio.Event()
        self.ran: list[list[str]] = []

    def agent(self, **kwargs: Any) -> Agent:
        @tool
        async def delete_files(paths: list[str]) -> str:
            """Delete files."""
            self.inside += 1
            self.changed.set()
            await self.release.wait()
            self.ran.append(paths)
            return "deleted"

        return Agent(
            model=ScriptedModel("delete_files", {"paths": ["/tmp/a"]}),
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
            **kwargs,
        )

    async def two_at_once(self, resume: Any) -> list[Any]:
        """Start two resumes; release the tool once both are inside it, or one was refused."""
        tasks = [asyncio.create_task(resume()), asyncio.create_task(resume())]
        for task in tasks:
            task.add_done_callback(lambda _: self.changed.set())
        while self.inside < 2 and not any(t.done() for t in tasks):
            await asyncio.wait_for(self.changed.wait(), 10)
            self.changed.clear()
        self.release.set()
        return await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_strands_session_on_redis_is_resumed_by_another_worker(
    redis_url: str, key_prefix: str
) -> None:
    """Strands' own SnapshotSessionManager, its storage on Redis: a fresh agent (another
    worker) picks the session up at its interrupt and answers it."""
    tool_gate = SlowDelete()
    tool_gate.release.set()
    blobs = RedisStorage(redis_url, prefix=key_prefix)
    first = tool_gate.agent(session_manager=SnapshotSessionManager("ticket-42", storage=blobs))
    asked = await first.invoke_async("clean up")
    assert asked.stop_reason == "interrupt"
    [pending] = asked.interrupts or []
    assert await blobs.list("session/ticket-42/")  # the snapshot is in Redis, not on disk
    other = tool_gate.agent(session_manager=SnapshotSessionManager("ticket-42", storage=blobs))
    answer = {"interruptId": pending.id, "response": {"type": "approve"}}
    done = await other.invoke_async([{"interruptResponse": answer}])
    assert str(done).strip() == "done (success): deleted"
    assert tool_gate.ran == [["/tmp/a"]]
    blobs.close()


async def test_two_concurrent_resumes_run_the_tool_twice_in_strands_and_once_with_the_lease(
    redis_url: str, key_prefix: str, storage: Storage
) -> None:
    """Measured on the real SDK: two workers resuming one Strands session at once both run
    the tool; through the adapter (the thread's lease in Redis) exactly one does."""
    bare = SlowDelete()
    blobs = RedisStorage(redis_url, prefix=key_prefix)

    def worker() -> Agent:
        return bare.agent(session_manager=SnapshotSessionManager("ticket-7", storage=blobs))

    [pending] = (await worker().invoke_async("clean up")).interrupts or []
    answer = [{"interruptResponse": {"interruptId": pending.id, "response": {"type": "approve"}}}]
    await bare.two_at_once(lambda: worker().invoke_async(answer))
    assert bare.ran == [["/tmp/a"], ["/tmp/a"]]
    blobs.close()

    leased = SlowDelete()
    agent = StrandsAgent(leased.agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_leased")).interrupts
    decision = {asked.id: Decision.approve()}
    results = await leased.two_at_once(lambda: agent.invoke(decision, thread_id="thread_leased"))
    assert leased.ran == [["/tmp/a"]]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], ThreadBusyError)


async def test_an_interrupt_keeps_the_time_it_was_asked_so_its_expiry_does_not_move(
    storage: Storage,
) -> None:
    await interrupts_keep_their_time(gated_spec([]).build(storage.sessions))


class FailsOnceAfterTheTool(ScriptedModel):
    """The scripted model, whose first call after the tool's result fails (a model outage)."""

    def __init__(self) -> None:
        super().__init__("delete_files", {"paths": ["/tmp/a"]})
        self.failed = False

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        ran = any("toolResult" in c for m in messages for c in m["content"])
        if ran and not self.failed:
            self.failed = True
            raise ConnectionError("the model is unreachable")
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def failing_after_the_tool(ran: list[list[str]]) -> Callable[[], Agent]:
    """Builds the gated agent (one model for all its builds, as one outage spans them)."""
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
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    return make_agent


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


class ReusesItsCallIds(ScriptedModel):
    """Numbers its tool calls per turn (as some providers do): the second turn's call has
    the first one's id."""

    def __init__(self) -> None:
        super().__init__("delete_files", {"paths": ["/tmp/a"]})

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = [c["toolResult"] for m in messages for c in m["content"] if "toolResult" in c]
        if len(results) != 1:
            async for event in super().stream(messages, *args, **kwargs):
                yield event
            return
        yield {"messageStart": {"role": "assistant"}}
        use = {"toolUseId": "use_1", "name": "list_files"}
        yield {"contentBlockStart": {"start": {"toolUse": use}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


async def test_a_later_call_with_an_approved_calls_id_runs_and_gets_its_own_result(
    storage: Storage,
) -> None:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return f"deleted {len(paths)}"

    @tool
    def list_files() -> str:
        """List files."""
        return "3 files left"

    def make_agent() -> Agent:
        return Agent(
            model=ReusesItsCallIds(),
            tools=[delete_files, list_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    agent = StrandsAgent(make_agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_ids")).interrupts
    done = await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_ids")
    assert done.message == "done (success): 3 files left"


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


class DeletesTwiceWithOneCallId(ScriptedModel):
    """Numbers its calls per turn: both turns call ``delete_files`` as ``use_1``, the first
    on ``/tmp/a``, the second on ``/tmp/b``."""

    def __init__(self) -> None:
        super().__init__("delete_files", {"paths": ["/tmp/a"]})

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = [c["toolResult"] for m in messages for c in m["content"] if "toolResult" in c]
        self.args = {"paths": ["/tmp/b"]} if len(results) == 1 else {"paths": ["/tmp/a"]}
        if len(results) != 1:
            async for event in super().stream(messages, *args, **kwargs):
                yield event
            return
        yield {"messageStart": {"role": "assistant"}}
        yield {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "use_1", "name": "delete_files"}}
            }
        }
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(self.args)}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


async def test_a_second_approval_of_a_call_id_used_again_is_a_card_of_its_own(
    make_bot: Any,
) -> None:
    deleted: list[list[str]] = []
    spec = gated_spec(deleted, name="st-twice", model=DeletesTwiceWithOneCallId)
    bot: Harness = await make_bot(spec=spec)
    first = await bot.start(requested_by=CAROL)
    await bot.decide("approve", first, user=ALICE)

    def cards() -> list[dict[str, Any]]:
        return [p for p in bot.slack.called("chat.postMessage") if "blocks" in p]

    await bot.slack.wait_for(lambda: "/tmp/b" in str(cards()[-1]), what="the second card")
    second = cards()[-1]["blocks"][-1]["elements"][0]["value"]
    assert bot.record_id(second) != bot.record_id(first)
    await bot.decide("approve", second, user=ALICE, message_ts=bot.message_ts(-1))
    assert (await bot.finished()).startswith("Finished: done (success): deleted 1")
    assert deleted == [["/tmp/a"], ["/tmp/b"]]


async def test_a_question_denied_reaches_the_tool_as_a_denial_not_as_its_answer(
    storage: Storage,
) -> None:
    """A denial (or an expiry) of a tool's own question carries a reason: the tool must
    be able to tell it from a person's answer, as LangGraph's graphs can."""
    answers: list[Any] = []

    @tool(context=True)
    def drop_database(tool_context: ToolContext) -> str:
        """Drop the database a person names."""
        answer = tool_context.interrupt("which", reason="Which database?")
        answers.append(answer)
        return f"dropped {answer}" if isinstance(answer, str) else "dropped nothing"

    def make_agent() -> Agent:
        return Agent(
            model=ScriptedModel("drop_database", {}), tools=[drop_database], callback_handler=None
        )

    agent = StrandsAgent(make_agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_denied_q")).interrupts
    done = await agent.invoke({asked.id: Decision.reject("prod")}, thread_id="thread_denied_q")
    assert answers == [{"type": "reject", "message": "prod"}]
    assert done.message == "done (success): dropped nothing"


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


async def test_answers_on_a_thread_never_run_are_refused_clearly(storage: Storage) -> None:
    agent = StrandsAgent(lambda: Agent(callback_handler=None), session_store=storage.sessions)
    with pytest.raises(ResumeError, match="has no open interrupts"):
        await agent.invoke({"v1:whatever": Decision.approve()}, thread_id="thread_never")


async def test_what_an_approved_strands_call_did_is_told_and_audited_once(
    make_bot: Any,
) -> None:
    """As for Signoff's own agents: the approved call's outcome is posted in the card's
    thread and audited (``tool_ran``), tied to the decision, even when the model call after
    it fails and the resume is retried."""
    ran: list[list[str]] = []
    spec = AgentSpec(
        name="st-told",
        build=lambda sessions: StrandsAgent(failing_after_the_tool(ran), session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec, reclaim_after=0.05)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done (success): deleted 1")
    assert ran == [["/tmp/a"]]
    assert bot.thread().count("delete_files: deleted 1") == 1
    trail = await bot.services.storage.audit.read(count=100)
    [told] = [e for e in trail if e.event == "tool_ran"]
    assert told.record_id == bot.record_id(value) and told.detail == "delete_files: deleted 1"


async def test_the_second_approved_call_under_a_reused_call_id_is_audited_too(
    make_bot: Any,
) -> None:
    """A provider numbering its calls per turn runs ``use_1`` twice, each approved on its
    own card: each run is audited, the second not taken for a retelling of the first."""
    deleted: list[list[str]] = []
    spec = gated_spec(
        deleted,
        name="st-twice-told",
        model=DeletesTwiceWithOneCallId,
        says=lambda paths: f"deleted {paths[0]}",
    )
    bot: Harness = await make_bot(spec=spec)
    first = await bot.start(requested_by=CAROL)
    await bot.decide("approve", first, user=ALICE)
    await bot.slack.wait_for(lambda: "/tmp/b" in str(bot.slack.called("chat.postMessage")[-1]))
    second = bot.slack.called("chat.postMessage")[-1]["blocks"][-1]["elements"][0]["value"]
    await bot.decide("approve", second, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.finished()
    trail = await bot.services.storage.audit.read(count=100)
    told = [(e.record_id, e.detail) for e in trail if e.event == "tool_ran"]
    assert told == [
        (bot.record_id(first), "delete_files: deleted /tmp/a"),
        (bot.record_id(second), "delete_files: deleted /tmp/b"),
    ]


class OneIdForTwoCalls(ScriptedModel):
    """Asks to delete /a and /keep in one turn, giving both calls the id ``use_1``; once
    they are answered, reports what each got."""

    def __init__(self) -> None:
        super().__init__("delete_files", {})

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = [c["toolResult"] for m in messages for c in m["content"] if "toolResult" in c]
        yield {"messageStart": {"role": "assistant"}}
        if not results:
            for path in ("/a", "/keep"):
                use = {"toolUseId": "use_1", "name": "delete_files"}
                yield {"contentBlockStart": {"start": {"toolUse": use}}}
                args = json.dumps({"paths": [path]})
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": args}}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        said = [r["content"][0]["text"] for r in results]
        yield {"contentBlockDelta": {"delta": {"text": f"got {len(said)}: {said[0]}"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


async def test_two_calls_under_one_id_are_refused_not_approved_as_one(storage: Storage) -> None:
    """Strands names a call's interrupt by the call's id: under one id, approving the card
    (showing the first call's arguments) would run both. The turn is refused; neither
    runs, each is answered with why, and the thread takes a new prompt."""
    deleted: list[list[str]] = []

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {paths}"

    def make_agent() -> Agent:
        return Agent(
            model=OneIdForTwoCalls(),
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    agent = StrandsAgent(make_agent, session_store=storage.sessions)
    refused = await agent.invoke("clean up", thread_id="thread_one_id")
    assert refused.stop_reason == "error" and not refused.interrupts
    assert "delete_files" in refused.message and "did not run" in refused.message
    again = await agent.invoke("anything else?", thread_id="thread_one_id")
    assert again.message == f"got 2: {refused.message}"
    assert deleted == []


@pytest.mark.parametrize("after_telling", [False, True])
async def test_what_a_strands_call_did_is_told_once_when_its_worker_died_telling_it(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch, after_telling: bool
) -> None:
    """The worker died once the run's state was saved, as it told what the approved call
    did (before, or after, telling it): the retried job tells it, once, and the run's end."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted), reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=after_telling)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done (success): deleted 2")
    assert died == ["died"] and deleted == [["/tmp/a", "/tmp/b"]]
    assert bot.thread().count("delete_files: deleted 2") == 1
    assert await tool_audits(bot) == [(bot.record_id(value), "delete_files: deleted 2")]


async def test_what_a_strands_call_did_before_the_next_card_is_told_when_its_worker_died(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run asked again once the approved call ran; its worker died telling what the
    call did: the retried job tells it and posts the next card."""
    deleted: list[list[str]] = []
    spec = gated_spec(
        deleted,
        name="st-died-telling",
        model=DeletesTwiceWithOneCallId,
        says=lambda paths: f"deleted {paths[0]}",
    )
    bot: Harness = await make_bot(spec=spec, reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=False)
    first = await bot.start(requested_by=CAROL)
    await bot.decide("approve", first, user=ALICE)
    await bot.slack.wait_for(lambda: "/tmp/b" in str(bot.slack.called("chat.postMessage")[-1]))
    assert died == ["died"]
    second = bot.slack.called("chat.postMessage")[-1]["blocks"][-1]["elements"][0]["value"]
    await bot.decide("approve", second, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.finished()
    assert deleted == [["/tmp/a"], ["/tmp/b"]]
    assert bot.thread().count("delete_files: deleted /tmp/a") == 1
    assert await tool_audits(bot) == [
        (bot.record_id(first), "delete_files: deleted /tmp/a"),
        (bot.record_id(second), "delete_files: deleted /tmp/b"),
    ]
