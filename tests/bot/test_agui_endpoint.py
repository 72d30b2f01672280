"""``POST /agui/{agent}`` driven by the real ``@ag-ui/client`` HttpAgent from npm (Node),
over real HTTP: run -> interrupt -> resume -> success; a cancelled interrupt never runs
the tool; a late resume gets a clear RUN_ERROR; without the token nothing runs."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from agui_endpoint import TOKEN, Endpoint, run_client, run_raw
from batch_agents import spec as deletions

from demo.agents import demo_agents


async def test_run_interrupt_resume_success_with_the_real_client(endpoint: Endpoint) -> None:
    first, second = await run_client(
        endpoint.url,
        "thread-approve",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    outcome = first["finished"]["outcome"]
    assert first["error"] is None and outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    assert interrupt["reason"] == "approval" and interrupt["toolCallId"] == "call_1"
    assert interrupt["expiresAt"].endswith("Z")  # from the agent's policy (24 h)
    assert interrupt["responseSchema"]["properties"]["type"]["enum"]
    edit_args = interrupt["responseSchema"]["properties"]["args"]  # the tool's input schema
    assert edit_args["properties"]["paths"]["type"] == "array"
    assert first["events"][0] == "RUN_STARTED" and "TOOL_CALL_START" in first["events"]
    assert first["pending"] == [interrupt["id"]]
    assert "TOOL_CALL_RESULT" not in first["events"]  # nothing ran before the approval

    assert second["error"] is None, second
    assert second["finished"] == {
        "outcome": {"type": "success"},
        "result": "done: deleted 2 file(s)",
    }
    assert second["pending"] == []
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    # The turn's tool call sits in the assistant message its parentMessageId names; the
    # final answer is a message of its own.
    assert second["assistant"][0] == {"id": "msg_call_1", "toolCalls": ["call_1"]}
    assert len(second["assistant"]) == 2 and second["assistant"][1]["toolCalls"] == []


async def test_a_cancelled_interrupt_never_runs_the_tool(endpoint: Endpoint) -> None:
    _, cancelled = await run_client(
        endpoint.url,
        "thread-cancel",
        [{"prompt": "clean up"}, {"answer": {"status": "cancelled", "payload": "not today"}}],
    )
    assert cancelled["error"] is None, cancelled
    assert cancelled["finished"]["outcome"] == {"type": "success"}, cancelled
    assert "not today" in cancelled["finished"]["result"]
    assert endpoint.bot.tool_log.calls == []


async def test_answering_again_otherwise_is_a_run_error_and_alike_hears_the_outcome(
    endpoint: Endpoint,
) -> None:
    """Another answer to an interrupt answered in the app is refused; the same answer sent
    again (as after a cut-off stream) hears how its round ended; the tool runs once."""
    first, _ = await run_client(
        endpoint.url,
        "thread-twice",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    late = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "reject"}}
    [again] = await run_client(endpoint.url, "thread-twice", [{"resume": [late]}])
    assert again["finished"] is None
    assert again["error"]["code"] == "decided_elsewhere"
    assert "already approved in the app" in again["error"]["message"]
    alike = {**late, "payload": {"type": "approve"}}
    [told] = await run_client(endpoint.url, "thread-twice", [{"resume": [alike]}])
    assert told["error"] is None and told["finished"]["outcome"] == {"type": "success"}, told
    assert told["finished"]["result"] == "done: deleted 2 file(s)"
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_without_the_token_nothing_runs_and_capabilities_are_served(
    endpoint: Endpoint,
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(endpoint.url, json={"threadId": "t", "runId": "r"}) as refused:
            assert refused.status == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with http.get(endpoint.url, headers=auth) as answer:
            capabilities = await answer.json()
    assert capabilities["humanInTheLoop"] == {
        "supported": True,
        "interrupts": True,
        "approvals": True,
        "approveWithEdits": True,
        "feedback": True,
    }
    assert endpoint.bot.tool_log.calls == []


@pytest.mark.parametrize(
    ("agent", "edits", "feedback"),
    [
        ("file-cleanup", True, True),  # its tool allows every decision
        ("email", True, False),  # send_email allows approve, edit and reject
        ("oncall-cleanup", False, False),  # a workflow node; its policy: approve or reject
    ],
)
async def test_capabilities_are_those_the_agents_tools_allow(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
    tmp_path: Path,
    agent: str,
    edits: bool,
    feedback: bool,
) -> None:
    """An app is told a decision is supported only when some tool of the agent allows it
    and the agent's policy lets approvers give it."""
    [spec] = [s for s in demo_agents(tmp_path) if s.name == agent]
    endpoint = await endpoint_for(spec=spec)
    url = endpoint.url.rsplit("/", 1)[0] + f"/{agent}"
    async with (
        aiohttp.ClientSession() as http,
        http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as answer,
    ):
        assert answer.status == 200
        capabilities = await answer.json()
    assert spec.description  # the demo's agents describe themselves
    assert capabilities["identity"] == {"name": agent, "description": spec.description}
    assert capabilities["humanInTheLoop"] == {
        "supported": True,
        "interrupts": True,
        "approvals": True,
        "approveWithEdits": edits,
        "feedback": feedback,
    }


async def test_a_malformed_body_or_thread_id_is_a_400_and_runs_nothing(endpoint: Endpoint) -> None:
    prompt = {"runId": "r", "messages": [{"id": "m", "role": "user", "content": "clean up"}]}
    bodies = [
        b"[" * 100_000 + b"]" * 100_000,  # deeper than a parser's recursion goes
        json.dumps({**prompt, "threadId": "nightly run"}).encode(),
        json.dumps({**prompt, "threadId": 7}).encode(),
        json.dumps(prompt).encode(),
    ]
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as http:
        for body in bodies:
            async with http.post(endpoint.url, data=body, headers=auth) as refused:
                assert refused.status == 400, await refused.text()
                error = (await refused.json())["error"]
                assert "RunAgentInput" in error or error.startswith("threadId: malformed")
    assert endpoint.bot.tool_log.calls == []
    assert endpoint.bot.slack.called("chat.postMessage") == []


async def test_an_errors_quote_of_a_malformed_thread_id_is_its_first_40_characters(
    endpoint: Endpoint,
) -> None:
    """A thread id may be as long as the body: the error quotes only its start."""
    prompt = {"runId": "r", "messages": [{"id": "m", "role": "user", "content": "clean up"}]}
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    sent_and_quoted = [
        ("x" * 40 + "y" * 500_000, "'" + "x" * 40 + "'"),
        ([7] * 100_000, "[" + "7, " * 13),
    ]
    async with aiohttp.ClientSession() as http:
        for thread_id, quoted in sent_and_quoted:
            body = json.dumps({**prompt, "threadId": thread_id})
            async with http.post(endpoint.url, data=body, headers=auth) as refused:
                assert refused.status == 400, await refused.text()
                error = (await refused.json())["error"]
            assert error.startswith(f"threadId: malformed thread id {quoted}: use"), error[:200]
    assert endpoint.bot.tool_log.calls == []


async def test_the_real_client_keeps_one_turns_tool_calls_in_one_assistant_message(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """Two calls in one model turn: the real client, following ``parentMessageId``, holds
    them in one assistant message, and each is an interrupt it answers by its id."""
    deleted: list[str] = []
    endpoint = await endpoint_for(spec=deletions(deleted, ["/tmp/a", "/tmp/b"], batch=False))
    asked, done = await run_client(
        endpoint.url,
        "thread-one-turn",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert [i["toolCallId"] for i in asked["finished"]["outcome"]["interrupts"]] == [
        "call_0",
        "call_1",
    ]
    assert [m["toolCalls"] for m in asked["assistant"]] == [["call_0", "call_1"]]
    assert done["finished"]["outcome"] == {"type": "success"}, done
    assert sorted(deleted) == ["/tmp/a", "/tmp/b"]


async def test_a_body_of_countless_bad_entries_is_refused_naming_the_first_alone(
    endpoint: Endpoint,
) -> None:
    """Not one problem per entry: a RUN_ERROR of megabytes, after seconds of the server's
    event loop spent writing it (twice: its cards read the body too)."""
    said = {
        "messages": "invalid RunAgentInput: messages.0.role: Field required",
        "resume": "invalid RunAgentInput: resume.list[_ResumeEntry].0.interruptId: Field "
        "required; resume._ResumeEntry: Input should be a valid dictionary or instance of "
        "_ResumeEntry",
    }
    for field, error in said.items():
        events = await run_raw(
            endpoint, {"threadId": "t-many", "runId": "r", field: [{}] * 200_000}
        )
        assert [(e["type"], e["message"]) for e in events] == [("RUN_ERROR", error)]
    assert endpoint.bot.tool_log.calls == []
    assert endpoint.bot.slack.called("chat.postMessage") == []
