"""AG-UI: a run's events as ag-ui-protocol 1.0 events, and RunAgentInput as run input.

Every emitted event is validated with the ag-ui-protocol package's own models and must
serialise back to exactly the dict we emitted, with no field the models do not know.
"""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic
import pytest
from ag_ui.core import (
    Event,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
)

from agent_runtime import (
    AfterInvocation,
    Agent,
    AgentResult,
    Decision,
    InterruptResponse,
    ScriptedModel,
    ToolCall,
    ToolContext,
    tool,
)
from agent_runtime.agui import parse_run_input, run_agui
from agent_runtime.agui.events import run_finished

EVENT = pydantic.TypeAdapter(Event)
PATHS = ["a.log", "b.log"]


def assert_no_unknown_fields(value: Any) -> None:
    """The models keep unknown keys as extras; the 1.0 schema's objects are closed."""
    if isinstance(value, pydantic.BaseModel):
        assert not value.model_extra, f"{type(value).__name__} has unknown {value.model_extra}"
        for name in type(value).model_fields:
            assert_no_unknown_fields(getattr(value, name))
    elif isinstance(value, list):
        for item in value:
            assert_no_unknown_fields(item)


def validate(event: dict[str, Any]) -> Any:
    wire = json.loads(json.dumps(event))
    model = EVENT.validate_python(wire)
    assert_no_unknown_fields(model)
    assert EVENT.dump_python(model, by_alias=True, mode="json") == wire
    return model


async def run(agent: Agent, body: dict[str, Any]) -> list[dict[str, Any]]:
    events = [dict(event) async for event in run_agui(agent, body)]
    for event in events:
        validate(event)
    return events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def start(thread_id: str = "t1", run_id: str = "run-1") -> dict[str, Any]:
    body = {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": "m1", "role": "user", "content": "clean up old logs"}],
    }
    RunAgentInput.model_validate(body)
    return body


def resume(entries: Any, *, run_id: str = "run-2") -> dict[str, Any]:
    return {"threadId": "t1", "runId": run_id, "messages": [], "resume": entries}


def cleanup_agent(deleted: list[list[str]], *, calls: int = 1) -> Agent:
    """Lists files, then asks approval for ``calls`` delete calls in one turn, then ends."""

    @tool
    def list_files(older_than_days: int) -> list[str]:
        """List files older than a number of days."""
        return PATHS

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    deletes = [
        ToolCall(id=f"call_delete_{n}", name="delete_files", args={"paths": [PATHS[n]]})
        for n in range(calls)
    ]
    model = ScriptedModel(
        [
            [ToolCall(id="call_list", name="list_files", args={"older_than_days": 5})],
            deletes,
            "Deleted the old logs.",
        ]
    )
    return Agent(model=model, tools=[list_files, delete_files], interrupt_on={"delete_files": True})


async def test_an_interrupting_run_finishes_with_the_interrupt_outcome():
    agent = cleanup_agent([])

    events = await run(agent, start())

    assert types(events) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    assert events[0] == {
        "type": "RUN_STARTED",
        "threadId": "t1",
        "runId": "run-1",
        "protocolVersion": "1.0",
    }
    assert json.loads(events[2]["delta"]) == {"older_than_days": 5}
    assert events[4]["content"] == json.dumps(PATHS)
    finished = validate(events[-1])
    assert isinstance(finished, RunFinishedEvent)
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    (interrupt,) = finished.outcome.interrupts
    stored = (await agent.session_store.load("t1")).snapshot["pending"][0]["interrupt"]
    assert interrupt.id == stored["id"]
    assert interrupt.reason == "approval"
    assert interrupt.message == "delete_files needs approval"
    assert interrupt.tool_call_id == "call_delete_0"
    assert interrupt.response_schema["properties"]["type"]["enum"] == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]
    assert interrupt.metadata == {
        "payload": {
            "tool": "delete_files",
            "args": {"paths": ["a.log"]},
            "description": "delete_files needs approval",
        }
    }


async def interrupted(agent: Agent) -> list[str]:
    """Start the thread and return the ids of the interrupts it stops on."""
    events = await run(agent, start())
    return [i["id"] for i in events[-1]["outcome"]["interrupts"]]


async def test_a_resume_on_the_same_thread_continues_the_run():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted)
    (iid,) = await interrupted(agent)
    body = resume([{"interruptId": iid, "status": "resolved", "payload": {"type": "approve"}}])
    RunAgentInput.model_validate(body)

    events = await run(agent, body)

    # The interrupted call was announced by the first run; this one reports its result.
    assert types(events) == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[0]["runId"] == "run-2"
    assert events[1]["toolCallId"] == "call_delete_0"
    assert events[1]["content"] == "deleted 1"
    assert events[3]["delta"] == "Deleted the old logs."
    assert events[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "run-2",
        "outcome": {"type": "success"},
        "result": "Deleted the old logs.",
    }
    assert deleted == [["a.log"]]


async def test_the_draft_resume_shape_is_accepted():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted)
    (iid,) = await interrupted(agent)

    events = await run(agent, resume({"interruptId": iid, "payload": {"type": "approve"}}))

    assert events[-1]["outcome"] == {"type": "success"}
    assert deleted == [["a.log"]]


async def test_a_cancelled_resume_rejects_the_call():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted)
    (iid,) = await interrupted(agent)

    entry = {"interruptId": iid, "status": "cancelled", "payload": "not today"}
    events = await run(agent, resume([entry]))

    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "not today"
    assert result["metadata"] == {"isError": True}
    assert events[-1]["outcome"] == {"type": "success"}
    assert deleted == []


async def test_a_resume_leaving_an_open_interrupt_unanswered_is_a_run_error():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted, calls=2)
    first, second = await interrupted(agent)
    before = await agent.session_store.load("t1")

    approve = {"status": "resolved", "payload": {"type": "approve"}}
    events = await run(agent, resume([{"interruptId": first, **approve}]))

    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert events[1]["code"] == "ResumeError"
    assert second in events[1]["message"]
    assert "unanswered" in events[1]["message"]
    assert await agent.session_store.load("t1") == before
    assert deleted == []

    both = [{"interruptId": first, **approve}, {"interruptId": second, **approve}]
    events = await run(agent, resume(both, run_id="run-3"))
    assert events[-1]["outcome"] == {"type": "success"}
    assert deleted == [["a.log"], ["b.log"]]


async def test_a_new_prompt_while_interrupted_is_a_run_error():
    agent = cleanup_agent([])
    await interrupted(agent)

    events = await run(agent, start(run_id="run-2"))

    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "answer them" in events[1]["message"]


async def test_a_decision_the_interrupt_does_not_allow_is_a_run_error():
    agent = cleanup_agent([])
    (iid,) = await interrupted(agent)

    events = await run(agent, resume([{"interruptId": iid, "status": "resolved", "payload": "ok"}]))

    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert f"interrupt {iid} is an approval" in events[1]["message"]


async def test_an_unreadable_input_is_a_lone_run_error():
    events = await run(cleanup_agent([]), {"messages": []})

    assert types(events) == ["RUN_ERROR"]
    assert "threadId" in events[0]["message"]
    assert events[0]["code"] == "UsageError"


async def test_a_free_form_interrupt_gets_the_payload_as_its_answer():
    seen: list[tuple[Any, Any]] = []

    @tool
    def purge(name: str, context: ToolContext) -> str:
        """Purge a record after confirmation."""
        answer = context.interrupt("confirm", reason=f"Really purge {name}?")
        seen.append((answer, context.resumed_metadata))
        return f"purged {name}" if answer == "yes" else "kept"

    model = ScriptedModel([[ToolCall(id="call_purge", name="purge", args={"name": "x"})], "done"])
    agent = Agent(model=model, tools=[purge])
    events = await run(agent, start())
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "confirm"
    assert interrupt["message"] == "Really purge x?"
    assert "responseSchema" not in interrupt

    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": "yes"}
    events = await run(agent, resume([{**entry, "metadata": {"by": "U123"}}]))

    assert seen == [("yes", {"by": "U123", "status": "resolved"})]
    assert next(e for e in events if e["type"] == "TOOL_CALL_RESULT")["content"] == "purged x"


async def test_a_model_failure_is_a_run_error():
    agent = Agent(model=ScriptedModel([]))

    events = await run(agent, start())

    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert events[1]["code"] == "error"
    assert "model call failed" in events[1]["message"]


async def test_invocations_chained_by_a_hook_are_one_agui_run():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted)

    def approve_everything(event: AfterInvocation) -> None:
        if event.result.stop_reason == "interrupt":
            event.resume = [
                InterruptResponse(interrupt_id=i.id, decision=Decision.approve())
                for i in event.result.interrupts
            ]

    agent.hooks.add(approve_everything)

    events = await run(agent, start())

    assert types(events).count("RUN_STARTED") == 1
    assert types(events).count("RUN_FINISHED") == 1
    starts = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert starts == ["call_list", "call_delete_0"]
    assert events[-1]["result"] == "Deleted the old logs."
    assert deleted == [["a.log"]]


def test_the_prompt_is_the_last_user_message_text():
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [
            {"id": "m1", "role": "user", "content": "first"},
            {"id": "m2", "role": "assistant", "content": "ok"},
            {
                "id": "m3",
                "role": "user",
                "content": [{"type": "text", "text": "clean up"}, {"type": "text", "text": "now"}],
            },
        ],
    }
    RunAgentInput.model_validate(body)

    parsed = parse_run_input(body)

    assert parsed.prompt == "clean up\nnow"
    assert parsed.resume == ()


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("cancelled", {"type": "RUN_FINISHED", "outcome": {"type": "cancelled"}}),
        ("max_steps", {"type": "RUN_ERROR", "code": "max_steps"}),
    ],
)
def test_other_stop_reasons(stop_reason, expected):
    result = AgentResult(stop_reason=stop_reason, message="why", thread_id="t1", run_id="x")

    event = run_finished(result, thread_id="t1", run_id="r1")

    validate(dict(event))
    assert expected.items() <= dict(event).items()


async def test_one_turns_tool_calls_share_one_parent_message_and_interrupts_say_when_they_expire():
    agent = cleanup_agent([], calls=2)
    later = datetime.now(UTC) + timedelta(hours=1)
    events = [dict(e) async for e in run_agui(agent, start(), expiry=lambda _: later)]
    for event in events:
        validate(event)
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    parents = {e["toolCallId"]: e["parentMessageId"] for e in starts}
    # list_files was the first turn; both deletes are the second turn's, one message.
    assert parents["call_delete_0"] == parents["call_delete_1"] != parents["call_list"]
    interrupts = events[-1]["outcome"]["interrupts"]
    assert {i["expiresAt"] for i in interrupts} == {later.isoformat().replace("+00:00", "Z")}
