"""Agents on the real strands-agents SDK with scripted models (offline), shared by the
test files of the Strands adapter and of AG-UI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from harness import ALICE, CHANNEL
from strands import Agent, tool
from strands.models.model import Model

from bot.agents.policy import AgentSpec, Policy
from signoff.strands import SignoffApprovals, StrandsAgent


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

    def spec(self, policy: Policy) -> AgentSpec:
        """The agent ``st-slow``, built on this tool, under ``policy``."""
        return AgentSpec(
            name="st-slow",
            build=lambda sessions: StrandsAgent(self.agent, session_store=sessions),
            policy=policy,
        )

    async def entered(self) -> None:
        """Wait until a run is inside the tool."""
        while self.inside < 1:
            await asyncio.wait_for(self.changed.wait(), 10)
            self.changed.clear()

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
