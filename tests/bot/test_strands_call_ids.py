"""Strands names a call's interrupt by the call's id: an id used again gets a card of its
own, and two calls of one turn under one id are refused, not approved as one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from harness import ALICE, CAROL, Harness
from strands import Agent, tool
from strands_agents import DeletesTwiceWithOneCallId, ScriptedModel, gated_spec

from agent_runtime import Decision
from signoff.strands import SignoffApprovals, StrandsAgent
from storage import Storage


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
