"""The real strands-agents SDK (a scripted model, offline) as a Signoff agent: the gate's
interrupts, Strands' own HumanInTheLoop intervention and a tool's own
``tool_context.interrupt`` are cards, and each decision through the real Bolt app
resumes the agent with ``interruptResponse``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from harness import ALICE, CAROL, CHANNEL, Harness
from strands import Agent, ToolContext, tool
from strands.models.model import Model
from strands.vended_interventions.hitl import HumanInTheLoop

from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
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


def gated_spec(deleted: list[list[str]]) -> AgentSpec:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    def make_agent() -> Agent:
        return Agent(
            model=ScriptedModel("delete_files", {"paths": ["/tmp/a", "/tmp/b"]}),
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    return AgentSpec(
        name="st-cleanup",
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
