"""interrupt_on: guarded tools, the four decisions, and remembered approvals."""

import pytest

from agent_runtime import (
    Agent,
    Decision,
    Remember,
    ResumeError,
    ScriptedModel,
    ToolCall,
    ToolContext,
    tool,
)


def email_tools(sent: list[dict], deleted: list[list[str]], originals: list):
    @tool
    def send_email(to: str, subject: str, context: ToolContext) -> str:
        """Send an email."""
        sent.append({"to": to, "subject": subject})
        originals.append(context.original_input)
        return f"sent to {to}"

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    @tool
    def list_files() -> list[str]:
        """List files."""
        return ["a.log"]

    return [send_email, delete_files, list_files]


def describe_email(call: ToolCall) -> str:
    return f"Send '{call.args['subject']}' to {call.args['to']}"


INTERRUPT_ON = {
    "delete_files": True,
    "send_email": {"allowed_decisions": ["approve", "reject"], "description": describe_email},
}


def email_agent(turns, sent, deleted=None, originals=None, interrupt_on=None):
    return Agent(
        model=ScriptedModel(turns),
        tools=email_tools(
            sent, deleted if deleted is not None else [], originals if originals is not None else []
        ),
        interrupt_on=interrupt_on or INTERRUPT_ON,
    )


EMAIL = ToolCall(id="e1", name="send_email", args={"to": "ops@x.io", "subject": "Weekly"})
DELETE = ToolCall(id="d1", name="delete_files", args={"paths": ["/tmp/a"]})


async def test_one_interrupt_per_guarded_call_with_description_and_allowed_decisions():
    sent: list[dict] = []
    listing = ToolCall(id="l1", name="list_files", args={})
    agent = email_agent([[EMAIL, DELETE, listing]], sent)
    result = await agent.invoke("go")
    by_tool = {i.tool_call.name: i for i in result.interrupts if i.tool_call}
    assert set(by_tool) == {"send_email", "delete_files"}
    assert by_tool["send_email"].description == "Send 'Weekly' to ops@x.io"
    assert by_tool["send_email"].allowed_decisions == ("approve", "reject")
    assert by_tool["delete_files"].allowed_decisions == ("approve", "edit", "reject", "respond")
    assert sent == []


async def test_approve_runs_the_tool():
    sent: list[dict] = []
    agent = email_agent([[EMAIL], "done"], sent)
    first = await agent.invoke("go", thread_id="t")
    await agent.invoke({first.interrupts[0].id: Decision.approve()}, thread_id="t")
    assert sent == [{"to": "ops@x.io", "subject": "Weekly"}]


async def test_edit_runs_with_the_new_args_and_keeps_the_original():
    sent: list[dict] = []
    originals: list = []
    agent = email_agent(
        [[EMAIL], "done"], sent, originals=originals, interrupt_on={"send_email": True}
    )
    first = await agent.invoke("go", thread_id="t")
    edited = {"to": "team@x.io", "subject": "Weekly (edited)"}
    await agent.invoke({first.interrupts[0].id: Decision.edit(edited)}, thread_id="t")
    assert sent == [edited]
    assert originals == [{"to": "ops@x.io", "subject": "Weekly"}]


async def test_edit_with_args_that_fail_the_schema_is_refused():
    agent = email_agent([[EMAIL], "done"], [], interrupt_on={"send_email": True})
    first = await agent.invoke("go", thread_id="t")
    with pytest.raises(ResumeError, match="subject"):
        await agent.invoke({first.interrupts[0].id: Decision.edit({"to": "x"})}, thread_id="t")


async def test_reject_returns_the_message_to_the_model_and_the_tool_never_runs():
    sent: list[dict] = []
    model_turns = [[EMAIL], "ok, not sending"]
    agent = email_agent(model_turns, sent)
    first = await agent.invoke("go", thread_id="t")
    await agent.invoke({first.interrupts[0].id: Decision.reject("not this week")}, thread_id="t")
    assert sent == []
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert model.requests[1].messages[-1].content == "not this week"


async def test_respond_returns_the_humans_text_without_running_the_tool():
    deleted: list[list[str]] = []
    agent = email_agent([[DELETE], "fine"], [], deleted=deleted)
    first = await agent.invoke("go", thread_id="t")
    answer = Decision.respond("Already cleaned it by hand.")
    await agent.invoke({first.interrupts[0].id: answer}, thread_id="t")
    assert deleted == []
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert model.requests[1].messages[-1].content == "Already cleaned it by hand."


async def test_a_decision_the_policy_does_not_allow_is_refused():
    sent: list[dict] = []
    agent = email_agent([[EMAIL], "done"], sent)
    first = await agent.invoke("go", thread_id="t")
    with pytest.raises(ResumeError, match="allows"):
        await agent.invoke({first.interrupts[0].id: Decision.edit({"to": "a"})}, thread_id="t")
    with pytest.raises(ResumeError, match="Decision"):
        await agent.invoke({first.interrupts[0].id: "yes please"}, thread_id="t")
    # The interrupt is still open and can be answered properly.
    final = await agent.invoke({first.interrupts[0].id: {"type": "approve"}}, thread_id="t")
    assert final.stop_reason == "end_turn" and len(sent) == 1


async def test_remember_for_the_run_skips_later_interrupts_in_the_same_run_only():
    deleted: list[list[str]] = []
    second = ToolCall(id="d2", name="delete_files", args={"paths": ["/tmp/b"]})
    turns = [[DELETE], [second], "done", [ToolCall(id="d3", name="delete_files", args={})]]
    agent = email_agent(turns, [], deleted=deleted)
    first = await agent.invoke("go", thread_id="t")
    trust = Decision.approve(remember=Remember(scope="run"))
    result = await agent.invoke({first.interrupts[0].id: trust}, thread_id="t")
    assert result.stop_reason == "end_turn"
    assert deleted == [["/tmp/a"], ["/tmp/b"]]
    # A new run on the thread asks again.
    later = await agent.invoke("again", thread_id="t")
    assert later.stop_reason == "interrupt"


async def test_remember_for_the_thread_covers_later_runs():
    deleted: list[list[str]] = []
    again = ToolCall(id="d2", name="delete_files", args={"paths": ["/tmp/b"]})
    agent = email_agent([[DELETE], "done", [again], "done again"], [], deleted=deleted)
    first = await agent.invoke("go", thread_id="t")
    trust = Decision.approve(remember=Remember(scope="thread"))
    await agent.invoke({first.interrupts[0].id: trust}, thread_id="t")
    later = await agent.invoke("again", thread_id="t")
    assert later.stop_reason == "end_turn"
    assert deleted == [["/tmp/a"], ["/tmp/b"]]


async def test_remember_only_the_same_args_still_asks_for_different_args():
    deleted: list[list[str]] = []
    same = ToolCall(id="d2", name="delete_files", args={"paths": ["/tmp/a"]})
    other = ToolCall(id="d3", name="delete_files", args={"paths": ["/etc"]})
    agent = email_agent([[DELETE], [same], [other]], [], deleted=deleted)
    first = await agent.invoke("go", thread_id="t")
    trust = Decision.approve(remember=Remember(scope="run", same_args=True))
    result = await agent.invoke({first.interrupts[0].id: trust}, thread_id="t")
    assert deleted == [["/tmp/a"], ["/tmp/a"]]
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].tool_call.args == {"paths": ["/etc"]}


async def test_remember_for_minutes_expires():
    from agent_runtime.trust import TrustLedger

    ledger = TrustLedger()
    trust = Decision.approve(remember=Remember(scope="minutes", minutes=30))
    ledger.remember(DELETE, trust, run_id="r1", now=1000.0)
    assert ledger.find(DELETE, run_id="r2", now=1000.0 + 29 * 60) == trust
    assert ledger.find(DELETE, run_id="r2", now=1000.0 + 31 * 60) is None


def test_unknown_decision_names_in_interrupt_on_are_refused():
    from agent_runtime import UsageError

    with pytest.raises(UsageError, match="allowed_decisions"):
        email_agent([], [], interrupt_on={"send_email": {"allowed_decisions": ["maybe"]}})
    with pytest.raises(UsageError, match="lacks"):
        email_agent([], [], interrupt_on={"launch_rockets": True})


async def test_a_remembered_edit_lets_later_calls_through_with_their_own_arguments():
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    agent = Agent(
        model=ScriptedModel(
            [
                [ToolCall(name="send_email", args={"to": "alice@typo.example"})],
                [ToolCall(name="send_email", args={"to": "bob@example.com"})],
                "done",
            ]
        ),
        tools=[send_email],
        interrupt_on={"send_email": True},
    )
    [question] = (await agent.invoke("mail them", thread_id="t")).interrupts
    fix = Decision.edit({"to": "alice@example.com"}, remember=Remember(scope="run"))
    await agent.invoke({question.id: fix}, thread_id="t")
    assert sent == ["alice@example.com", "bob@example.com"]


async def test_trusting_an_edit_with_the_same_args_trusts_the_edited_arguments_only():
    """An approver who corrected the arguments and trusted "these arguments" trusted the
    ones they wrote: the model's rejected arguments, proposed again, are asked about."""
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    typo = {"to": "alice@typo.example"}
    agent = Agent(
        model=ScriptedModel(
            [
                [ToolCall(name="send_email", args=typo)],
                [ToolCall(name="send_email", args=typo)],
                "done",
            ]
        ),
        tools=[send_email],
        interrupt_on={"send_email": True},
    )
    [question] = (await agent.invoke("mail her", thread_id="t")).interrupts
    fix = Decision.edit({"to": "alice@example.com"}, remember=Remember(scope="run", same_args=True))
    result = await agent.invoke({question.id: fix}, thread_id="t")
    assert sent == ["alice@example.com"]
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].tool_call.args == typo


async def test_a_later_call_reusing_an_earlier_calls_id_is_asked_about_again():
    """Some providers number calls per response: an id seen before names another call."""
    deleted: list[list[str]] = []

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    agent = Agent(
        model=ScriptedModel(
            [
                [ToolCall(id="call_0", name="delete_files", args={"paths": ["/tmp/old.log"]})],
                [
                    ToolCall(id="call_0", name="delete_files", args={"paths": ["/etc"]}),
                    ToolCall(id="call_0", name="delete_files", args={"paths": ["/var"]}),
                ],
                "done",
            ]
        ),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
    )
    [question] = (await agent.invoke("clean up", thread_id="t")).interrupts
    second = await agent.invoke({question.id: Decision.approve()}, thread_id="t")
    assert deleted == [["/tmp/old.log"]]
    assert second.stop_reason == "interrupt" and len(second.interrupts) == 2
    assert len({i.id for i in second.interrupts} | {question.id}) == 3
