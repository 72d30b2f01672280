"""What a LangChain agent's approved call did is posted in its card's thread and audited
once, even when the worker telling it died."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from adapter_checks import first_telling_dies, tool_audits
from harness import ALICE, CAROL, CHANNEL, Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel, gated_chat_agent, posted_cards

from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from signoff.langgraph import LangGraphAgent


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_what_a_langchain_agents_approved_call_did_is_told_and_audited(
    make_bot: Any, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    """The approved call's outcome is in its card's thread and audited (``tool_ran``, tied
    to its card); the denied one did not run, and is not audited as a failure. A batch's
    actions are the model's calls too: each card is tied to the call it approved."""
    deleted: list[list[str]] = []

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/var/keep"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}},
    ]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    agent_spec = AgentSpec(
        name="lc-told",
        build=lambda sessions: gated_chat_agent(model, mode, saver, sessions, deleted),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) == 2, what="a card per tool call")
    first, second = (c["blocks"][-1]["elements"][0]["value"] for c in posted_cards(bot))
    ts = [str(a["ts"]) for a in bot.slack.answers("chat.postMessage")]
    status, body = await bot.submit(ids.DENY_VIEW, first, user=ALICE, text="keep that one")
    assert status == 200 and "errors" not in body
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.APPROVE, second, user=ALICE, message_ts=ts[1])

    def said() -> list[dict[str, Any]]:  # anywhere: each of the round's cards has a thread
        return bot.slack.called("chat.postMessage")

    def ended() -> bool:
        return any(str(p.get("text")).startswith("Finished: all done") for p in said())

    await bot.slack.wait_for(ended, what="the run's end")
    assert deleted == [["/tmp/a", "/tmp/b"]]
    told = [p.get("thread_ts") for p in said() if p.get("text") == "delete_files: deleted 2"]
    assert told == [ts[1]]  # in the thread of the card that approved it
    trail = await bot.services.storage.audit.read(count=100)
    audited = [(e.event, e.record_id, e.detail) for e in trail if e.event.startswith("tool_")]
    assert audited == [("tool_ran", bot.record_id(second), "delete_files: deleted 2")]


async def test_a_second_call_under_a_tool_call_id_used_before_is_told_and_audited(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    """A model numbering its calls per turn calls ``c1`` twice, each approved on its card:
    the second run is a tool message of its own, not taken for the first one's."""
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {paths[0]}"

    def call(path: str) -> AIMessage:
        args = {"paths": [path]}
        return AIMessage(
            content="", tool_calls=[{"id": "c1", "name": "delete_files", "args": args}]
        )

    model = ScriptedChatModel(messages=iter([call("/a"), call("/b"), AIMessage(content="done")]))
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode="per_call")
    agent_spec = AgentSpec(
        name="lc-twice",
        build=lambda sessions: LangGraphAgent(
            create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) == 1, what="the first card")
    first = posted_cards(bot)[0]["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, first, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) == 2, what="the second card")
    second = posted_cards(bot)[1]["blocks"][-1]["elements"][0]["value"]
    posts, answers = bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage")
    [ts] = [str(a["ts"]) for p, a in zip(posts, answers, strict=True) if "/b" in str(p)]
    await bot.click(ids.APPROVE, second, user=ALICE, message_ts=ts)

    def said() -> list[str]:
        return [str(p.get("text")) for p in bot.slack.called("chat.postMessage")]

    await bot.slack.wait_for(
        lambda: any(t.startswith("Finished: done") for t in said()), what="the run's end"
    )
    assert deleted == [["/a"], ["/b"]]
    assert [t for t in said() if t.startswith("delete_files")] == [
        "delete_files: deleted /a",
        "delete_files: deleted /b",
    ]
    trail = await bot.services.storage.audit.read(count=100)
    told = [(e.record_id, e.detail) for e in trail if e.event == "tool_ran"]
    assert told == [
        (bot.record_id(first), "delete_files: deleted /a"),
        (bot.record_id(second), "delete_files: deleted /b"),
    ]


@pytest.mark.parametrize("after_telling", [False, True])
async def test_what_a_langchain_agents_call_did_is_told_once_when_its_worker_died_telling_it(
    make_bot: Any, saver: AsyncSqliteSaver, monkeypatch: pytest.MonkeyPatch, after_telling: bool
) -> None:
    """The worker died once the graph and its marker were saved, as it told what the
    approved call did (before, or after, telling it): the retried job tells it, once, and
    the run's end."""
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    call = {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}}
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="all done")])
    )
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True})
    agent_spec = AgentSpec(
        name="lc-died-telling",
        build=lambda sessions: LangGraphAgent(
            create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec, reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=after_telling)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: all done")
    assert died == ["died"] and deleted == [["/tmp/a", "/tmp/b"]]
    assert bot.thread().count("delete_files: deleted 2") == 1
    assert await tool_audits(bot) == [(bot.record_id(value), "delete_files: deleted 2")]
