"""What the card says is what the run received: every decision, every interrupt source.

Each case starts a run through the bot, decides it over signed HTTP as an approver
would (a button, or a modal's submission), waits for the run to finish, then compares
the headline of the updated card with what the tool, hook, node or model was given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import strands
from fakes import OneToolModel
from harness import ALICE, BOB, CHANNEL, Harness, one_delete_spec
from pydantic import BaseModel
from strands_agents import ScriptedModel

from agent_runtime import (
    Agent,
    BeforeToolCall,
    Decision,
    NodeContext,
    ToolContext,
    Workflow,
    interrupt_tool,
    tool,
)
from agent_runtime.policy import apply_decision
from agent_runtime.results import ToolResult
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.runs.drive import outcome_text
from bot.ui import ids
from signoff.strands import SignoffApprovals, StrandsAgent

PATHS = ["/tmp/a", "/tmp/b"]
EDITED = ["/tmp/a"]
POLICY = Policy(channel=CHANNEL, users=(ALICE,))


@dataclass
class Seen:
    """What the run's own code was given: the tool's (or node's) input, the answers."""

    ran: list[Any] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)


def _delete_tool(seen: Seen, *, asks: bool) -> Any:
    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete files; with ``asks``, the tool itself asks a person first."""
        if asks:
            answer = context.interrupt("confirm", reason={"paths": paths})
            seen.answers.append(answer)
            assert isinstance(answer, Decision)
            if answer.type in ("reject", "respond"):
                return f"not deleted: {answer.message}"
        seen.ran.append(paths)
        return f"deleted {len(paths)}"

    return delete_files


def _agent_spec(seen: Seen, source: str) -> AgentSpec:
    def ask_in_a_hook(event: BeforeToolCall) -> None:
        answer = event.interrupt("review", reason={"paths": event.tool_call.args["paths"]})
        seen.answers.append(answer)
        assert isinstance(answer, Decision)
        apply_decision(event, answer)

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": PATHS}),
            tools=[_delete_tool(seen, asks=source == "tool")],
            interrupt_on={"delete_files": True} if source == "interrupt_on" else None,
            hooks=[ask_in_a_hook] if source == "hook" else [],
            session_store=store,
            name=source,
        )

    return AgentSpec(name=source, build=build, policy=POLICY)


def _workflow_spec(seen: Seen) -> AgentSpec:
    async def delete(ctx: NodeContext) -> str:
        seen.ran.append(ctx.input["paths"])
        return "deleted"

    def build(store: SessionStore) -> Workflow:
        return Workflow(
            nodes={"plan": _plan, "delete": delete},
            interrupt_before={"delete": True},
            session_store=store,
            name="node",
        )

    return AgentSpec(name="node", build=build, policy=POLICY)


async def _plan(ctx: NodeContext) -> dict[str, Any]:
    return {"paths": PATHS}


class Question(BaseModel):
    question: str
    choices: list[str]


def _question_spec(seen: Seen) -> AgentSpec:
    def build(store: SessionStore) -> Agent:
        ask = interrupt_tool("ask_region", Question, "Ask which region to clean")
        return Agent(
            model=OneToolModel(
                "ask_region", {"question": "Which region?", "choices": ["eu", "us", "ap"]}
            ),
            tools=[ask],
            session_store=store,
            name="question",
        )

    return AgentSpec(name="question", build=build, policy=POLICY)


SPECS: dict[str, Callable[[Seen], AgentSpec]] = {
    "interrupt_on": lambda seen: _agent_spec(seen, "interrupt_on"),
    "hook": lambda seen: _agent_spec(seen, "hook"),
    "tool": lambda seen: _agent_spec(seen, "tool"),
    "node": _workflow_spec,
    "question": _question_spec,
}

# source, how the approver decides, the card's headline, what the run's code was given
# ("ran": the input the action ran with; "answer": the decision's type the code got),
# and what the run's last words (the model's, or the workflow's) contain.
CASES = [
    ("interrupt_on", "approve", "Approved", PATHS, None, "deleted 2"),
    ("interrupt_on", "edit", "Approved with edits", EDITED, None, "deleted 1"),
    # An Edit form sent back as it was shown is an approval: nothing was edited.
    ("interrupt_on", "unchanged", "Approved", PATHS, None, "deleted 2"),
    ("interrupt_on", "reject", "Denied", None, None, "no, not today"),
    ("interrupt_on", "respond", "Answered instead of run", None, None, "done by hand"),
    ("hook", "approve", "Approved", PATHS, "approve", "deleted 2"),
    ("hook", "edit", "Approved with edits", EDITED, "edit", "deleted 1"),
    ("hook", "reject", "Denied", None, "reject", "no, not today"),
    ("hook", "respond", "Replied", None, "respond", "done by hand"),
    ("tool", "approve", "Approved", PATHS, "approve", "deleted 2"),
    ("tool", "edit", "Approved with edits", EDITED, "edit", "deleted 1"),
    ("tool", "unchanged", "Approved", PATHS, "approve", "deleted 2"),
    ("tool", "reject", "Denied", None, "reject", "not deleted: no, not today"),
    ("tool", "respond", "Replied", None, "respond", "not deleted: done by hand"),
    ("node", "approve", "Approved", PATHS, None, "deleted"),
    ("node", "edit", "Approved with edits", EDITED, None, "deleted"),
    ("node", "unchanged", "Approved", PATHS, None, "deleted"),
    ("node", "reject", "Denied", None, None, "no, not today"),
    ("question", "choose", "Answered", None, None, "done: us"),
    ("question", "respond", "Answered", None, None, "done: done by hand"),
    ("question", "reject", "Declined", None, None, "not answered: no, not today"),
]


async def _decide(bot: Harness, value: str, how: str) -> None:
    if how == "approve":
        await bot.click(ids.APPROVE, value, user=ALICE)
        return
    if how == "choose":
        block = bot.posted()["blocks"][-2]
        await bot.click(f"{ids.CHOOSE}.1", "1", user=ALICE, block_id=block["block_id"])
        return
    callback, text = {
        "edit": (ids.EDIT_VIEW, '{"paths": ["/tmp/a"]}'),
        "unchanged": (ids.EDIT_VIEW, '{"paths": ["/tmp/a", "/tmp/b"]}'),
        "reject": (ids.DENY_VIEW, "no, not today"),
        "respond": (ids.REPLY_VIEW, "done by hand"),
    }[how]
    status, body = await bot.submit(callback, value, user=ALICE, text=text)
    assert status == 200 and "errors" not in body, body


@pytest.mark.parametrize(("source", "how", "headline", "ran", "answer", "last_words"), CASES)
async def test_the_card_says_what_the_run_received(
    make_bot: Any,
    source: str,
    how: str,
    headline: str,
    ran: list[str] | None,
    answer: str | None,
    last_words: str,
) -> None:
    seen = Seen()
    bot: Harness = await make_bot(spec=SPECS[source](seen))
    value = await bot.start()
    await _decide(bot, value, how)
    final = await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    await bot.services.background.idle()  # a form's decision redraws the card after its ack

    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"].startswith(f"{headline}:")
    assert seen.ran == ([ran] if ran is not None else [])
    if answer is not None:
        assert seen.answers and seen.answers[-1].type == answer
    assert last_words in final


async def test_a_tools_own_interrupt_offers_edit_and_the_tool_sees_the_original_input(
    make_bot: Any,
) -> None:
    originals: list[Any] = []

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete files once a person confirms."""
        context.interrupt("confirm", reason={"paths": paths})
        originals.append(context.original_input)
        return f"deleted {len(paths)}"

    def build(store: SessionStore) -> Agent:
        model = OneToolModel("delete_files", {"paths": PATHS})
        return Agent(model=model, tools=[delete_files], session_store=store, name="own")

    bot: Harness = await make_bot(spec=AgentSpec(name="own", build=build, policy=POLICY))
    value = await bot.start()
    buttons = [e["text"]["text"] for e in bot.posted()["blocks"][-1]["elements"] if "text" in e]
    assert "Edit" in buttons
    await _decide(bot, value, "edit")
    assert "deleted 1" in await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert originals == [{"paths": PATHS}]
    await bot.services.background.idle()  # a form's decision redraws the card after its ack
    update = str(bot.slack.called("chat.update")[-1]["blocks"])
    assert '"/tmp/a"' in update and "Run with" in update
    # What was asked is labelled so: the call that ran is the edit.
    assert "*Arguments as asked*" in update and "*Arguments*\\n" not in update


async def test_a_card_decided_while_its_post_was_on_its_way_shows_the_decision(
    make_bot: Any,
) -> None:
    """An app, a job or a withdrawal can decide a request between Slack posting its card
    and the post being recorded: the card is redrawn, never left offering buttons."""
    bot: Harness = await make_bot()
    store = bot.services.storage.interrupts
    mark_posted = store.mark_posted

    async def withdrawn_first(rid: str, *args: Any, **kwargs: Any) -> Any:
        record = await bot.services.storage.queries.get(rid)
        assert record is not None
        await store.cancel_run(record.run_id, reason="withdrawn", now=bot.clock.now())
        return await mark_posted(rid, *args, **kwargs)

    store.mark_posted = withdrawn_first  # type: ignore[method-assign]
    await bot.start()
    await bot.slack.wait_calls("chat.update")
    [update] = bot.slack.called("chat.update")
    assert update["ts"] == bot.message_ts(0)
    assert update["blocks"][0]["text"]["text"] != bot.posted(0)["blocks"][0]["text"]["text"]
    assert "actions" not in [block["type"] for block in update["blocks"]]


async def test_a_denied_call_is_neither_audited_nor_posted_as_a_tool_outcome(
    make_bot: Any,
) -> None:
    """The tool never ran: nothing may say it ran or failed (the denial is audited)."""
    bot: Harness = await make_bot()
    value = await bot.start()
    await bot.click(ids.DENY, value, user=BOB)
    await bot.slack.wait_calls("views.open")
    status, _ = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not on a Friday")
    assert status == 200
    await bot.finished()
    assert bot.tool_log.calls == []
    trail = await bot.services.storage.audit.read(count=50)
    assert [e.event for e in trail if e.event.startswith("tool_")] == []
    assert "denied" in [e.event for e in trail]
    assert not [t for t in bot.thread() if t.startswith("delete_files:")]


def _failing_tool_spec() -> AgentSpec:
    """An agent whose approved ``delete_files`` raises."""

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files (here: the disk refuses)."""
        raise OSError("disk is read-only")

    return one_delete_spec(delete_files, Policy(channel=CHANNEL, users=(ALICE,)))


def _strands_failing_spec() -> AgentSpec:
    """The same on the Strands SDK, whose failure text ("Error: ...") lacks the name."""

    @strands.tool
    def delete_files(paths: list[str]) -> str:
        """Delete files (here: the disk refuses)."""
        raise OSError("disk is read-only")

    def make_agent() -> strands.Agent:
        return strands.Agent(
            model=ScriptedModel("delete_files", {"paths": ["/tmp/a"]}),
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
    ("spec", "told"),
    [
        (_failing_tool_spec, "delete_files failed: disk is read-only"),
        (_strands_failing_spec, "delete_files: Error: OSError - disk is read-only"),
    ],
    ids=["signoff", "strands"],
)
async def test_a_failing_tools_outcome_names_the_tool_once(
    make_bot: Any, spec: Callable[[], AgentSpec], told: str
) -> None:
    """The thread and the audit trail say which tool failed, and say it once."""
    bot: Harness = await make_bot(spec=spec())
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    assert [t for t in bot.thread() if "disk is read-only" in t and "Finished" not in t] == [told]
    trail = await bot.services.storage.audit.read(count=50)
    assert [e.detail for e in trail if e.event == "tool_failed"] == [told]


async def test_input_a_tool_refuses_is_told_with_the_tools_name_once(make_bot: Any) -> None:
    """An approved call whose arguments the tool's schema refuses: the thread and the audit
    trail name the tool once, then what was wrong with its input."""

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return "deleted"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": "/tmp/a"}),
            tools=[delete_files],
            interrupt_on={"delete_files": True},
            session_store=store,
            name="cleanup",
        )

    spec = AgentSpec(name="cleanup", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    [told] = [t for t in bot.thread() if "invalid input" in t and "Finished" not in t]
    assert told.startswith("delete_files: invalid input: paths: ")
    assert told.count("delete_files") == 1
    trail = await bot.services.storage.audit.read(count=50)
    assert [e.detail for e in trail if e.event == "tool_failed"] == [told]


@pytest.mark.parametrize(
    ("said", "told"),
    [
        # LangGraph's ToolNode, a tool that raised
        ("Error: OSError('disk')\n Please fix your mistakes.", "delete_files: Error: OSError("),
        # Genkit, a restarted call an earlier try started and lost
        ("delete_files was not run again: an earlier try", "delete_files was not run again"),
        # Signoff's agent loop, input the tool's schema refused
        ("invalid input for delete_files: paths: Field required", "delete_files: invalid input"),
    ],
)
def test_each_adapters_failure_text_is_told_with_the_tools_name_once(said: str, told: str) -> None:
    text = outcome_text("delete_files", ToolResult(content=said, is_error=True))
    assert text.startswith(told) and text.count("delete_files") == 1
    # What a tool returned is its own words: always after its name.
    assert outcome_text("echo", ToolResult(content="echo hi")) == "echo: echo hi"
