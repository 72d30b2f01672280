"""A real LangChain agent's HumanInTheLoopMiddleware batch is a card per tool call; withdrawn,
the agent takes a new prompt."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from adapter_checks import record_unchecked_edit
from harness import ALICE, CAROL, CHANNEL, Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel, gated_chat_agent, posted_cards

from agent_runtime import Decision
from agent_runtime.errors import ResumeError
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from signoff.langgraph import LangGraphAgent
from storage import Storage


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_langchains_hitl_middleware_batch_is_a_card_per_call_decided_one_by_one(
    make_bot: Any, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/var/keep"]}},
    ]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    graph = create_agent(
        model,
        tools=[delete_files],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode=mode)
        ],
        checkpointer=saver,
    )
    agent_spec = AgentSpec(
        name="lc-cleanup",
        build=lambda sessions: LangGraphAgent(
            graph,
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) == 2, what="a card per tool call")
    first, second = posted_cards(bot)
    assert "/tmp/b" in str(first["blocks"]) and "/var/keep" in str(second["blocks"])
    answers = bot.slack.answers("chat.postMessage")
    ts = [
        str(a["ts"])
        for p, a in zip(bot.slack.called("chat.postMessage"), answers, strict=True)
        if p.get("blocks")
    ]

    # One answer leaves the graph waiting; the second resumes it with both, in order.
    await bot.click(
        ids.APPROVE, first["blocks"][-1]["elements"][0]["value"], user=ALICE, message_ts=ts[0]
    )
    await bot.slack.wait_calls("chat.update")
    storage = bot.services.storage
    streams = [storage.keys.resume_stream(shard) for shard in storage.keys.all_shards]
    assert [await storage.client.raw.xlen(s) for s in streams] == [0] * len(streams)  # no job
    assert deleted == []
    deny = second["blocks"][-1]["elements"][0]["value"]
    status, body = await bot.submit(ids.DENY_VIEW, deny, user=ALICE, text="keep that one")
    assert status == 200 and "errors" not in body
    final = await bot.finished()  # in the first card's thread
    assert final.startswith("Finished: all done")
    assert deleted == [["/tmp/a", "/tmp/b"]]


class StrictChatModel(ScriptedChatModel):
    """Refuses a history with a tool call that has no response, as model APIs do."""

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
        unanswered = [c["id"] for c in calls if c["id"] not in answered]
        if unanswered:
            raise ValueError(f"tool calls {unanswered} have no response")
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_withdrawn_langchain_agent_takes_a_new_prompt(
    storage: Storage, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    deleted: list[list[str]] = []

    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}}]
    model = StrictChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="what now?")])
    )
    agent = gated_chat_agent(model, mode, saver, storage.sessions, deleted)
    [asked] = (await agent.invoke("clean up", thread_id="thread_withdrawn")).interrupts
    assert await agent.cancel("thread_withdrawn", "withdrawn by Carol") is not None
    with pytest.raises(ResumeError, match="unknown interrupt id"):  # not a retry of it
        await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_withdrawn")
    again = await agent.invoke("anything else?", thread_id="thread_withdrawn")
    assert again.message == "what now?"
    assert deleted == []
    state = await agent.graph.aget_state({"configurable": {"thread_id": "thread_withdrawn"}})
    [answer] = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert answer.content == "withdrawn by Carol"


async def test_a_batch_action_is_tied_to_a_model_call_only_when_that_is_sure(
    storage: Storage, saver: AsyncSqliteSaver
) -> None:
    """Two like calls, a ``when`` predicate asking about the second only: the action could
    be either, so its card is tied to neither (the one that ran unasked is not told as
    approved on it)."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return f"deleted {len(paths)}"

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/tmp/a"]}},
    ]
    model = ScriptedChatModel(messages=iter([AIMessage(content="", tool_calls=calls)]))
    second_only = {
        "allowed_decisions": ["approve", "reject"],
        "when": lambda request: request.tool_call["id"] == "c2",
    }
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": second_only})
    agent = LangGraphAgent(
        create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
        input=lambda text: {"messages": [{"role": "user", "content": text}]},
        session_store=storage.sessions,
    )
    [asked] = (await agent.invoke("clean up", thread_id="thread_like")).interrupts
    assert asked.tool_call is not None and asked.tool_call.id not in ("c1", "c2")


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_tool_the_middleware_allows_only_approve_or_reject_gets_only_those_buttons(
    make_bot: Any, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    """The real ``HumanInTheLoopMiddleware`` limits ``delete_files`` to approve or reject:
    its card offers only Approve and Deny, an Edit sent anyway changes nothing, and the
    Deny resumes the agent with the rejection, the tool never run."""
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}}]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="kept")])
    )
    gate = HumanInTheLoopMiddleware(
        interrupt_on={"delete_files": {"allowed_decisions": ["approve", "reject"]}},
        interrupt_mode=mode,
    )
    graph = create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver)
    agent_spec = AgentSpec(
        name="lc-limited",
        build=lambda sessions: LangGraphAgent(
            graph,
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    value = await bot.start(requested_by=CAROL)
    [card] = posted_cards(bot)
    buttons = [e["text"]["text"] for e in card["blocks"][-1]["elements"] if "text" in e]
    assert buttons == ["Approve", "Deny"]

    status, body = await bot.submit(ids.EDIT_VIEW, value, user=ALICE, text='{"paths": ["/"]}')
    assert status == 200 and "not offered" in body, body
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.decision is None

    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="keep it")
    assert status == 200 and "errors" not in body, body
    assert (await bot.finished()).startswith("Finished: kept")
    assert deleted == []
    state = await graph.aget_state({"configurable": {"thread_id": record.thread_id}})
    [answer] = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error" and "keep it" in str(answer.content)


@pytest.mark.parametrize("mode", ["batched", "per_call"])
@pytest.mark.parametrize(
    ("how", "ran", "told"),
    [("edit", [["/tmp/a"]], "deleted 1"), ("respond", [], "done by hand")],
)
async def test_an_edit_or_reply_on_the_card_is_the_middlewares_own_decision(
    make_bot: Any,
    saver: AsyncSqliteSaver,
    mode: Literal["batched", "per_call"],
    how: str,
    ran: list[list[str]],
    told: str,
) -> None:
    """An Edit or a Reply made on the card reaches LangChain's HumanInTheLoopMiddleware as
    its own ``edit`` or ``respond`` decision (per call, checked against the tool's schema):
    the tool runs with the typed arguments, or the model gets the reply as its result."""
    deleted: list[list[str]] = []
    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}}]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    graph: list[LangGraphAgent] = []

    def build(sessions: SessionStore) -> LangGraphAgent:
        graph.append(gated_chat_agent(model, mode, saver, sessions, deleted))
        return graph[-1]

    agent_spec = AgentSpec(
        name="lc-edit", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,))
    )
    bot: Harness = await make_bot(spec=agent_spec)
    value = await bot.start(requested_by=CAROL)
    await bot.decide(how, value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: all done")
    assert deleted == ran
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None
    state = await graph[0].graph.aget_state({"configurable": {"thread_id": record.thread_id}})
    [result] = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert told in str(result.content) and result.status == "success"


async def test_an_edit_the_middleware_refuses_is_told_at_once_and_runs_nothing(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    """Per call, LangChain checks an edit against the tool's schema as the graph resumes,
    on every try alike: an edit that does not fit (one recorded unchecked; the Edit modal
    now refuses it) is told in the thread at once, not after retries named by an
    exception's type alone, and the tool does not run."""
    deleted: list[list[str]] = []
    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}}]
    model = ScriptedChatModel(messages=iter([AIMessage(content="", tool_calls=calls)]))
    spec = AgentSpec(
        name="lc-bad-edit",
        build=lambda sessions: gated_chat_agent(model, "per_call", saver, sessions, deleted),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start(requested_by=CAROL)
    await record_unchecked_edit(bot, value, {"paths": "/tmp/a"})
    await bot.slack.wait_for(
        lambda: any(t.startswith("Could not resume this run:") for t in bot.thread()),
        what="why the run was not resumed",
    )
    [told] = [t for t in bot.thread() if t.startswith("Could not resume this run:")]
    assert told == (
        "Could not resume this run: the graph refused the answer to delete_files, which must "
        "fit what its interrupt takes (edit.edited_action.args.paths: Input should be a valid "
        "list); the graph still waits: start the run again. It will not be retried; see the "
        "worker log"
    )
    assert deleted == []
