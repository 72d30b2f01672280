"""``POST /agui/{agent}`` driven by the real ``@ag-ui/client`` HttpAgent from npm (Node),
over real HTTP: run -> interrupt -> resume -> success; a cancelled interrupt never runs
the tool; a late resume gets a clear RUN_ERROR. The interrupts are cards in Slack too:
the first answer wins, in the app or on the card, and the other surface says so."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from batch_agents import spec as deletions
from fakes import OneToolModel
from harness import ALICE, BOB, CHANNEL, Harness, ToolLog, cleanup_spec
from pydantic import SecretStr
from test_strands_adapter import SlowDelete, failing_after_the_tool, gated_spec

from agent_runtime import Agent, Decision, ToolContext, tool
from agent_runtime.messages import args_digest
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Escalate, Policy
from bot.api.agui import AGUI_PATH
from bot.api.agui_cards import answer_cards
from bot.process.web import operator_app
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from signoff.strands import StrandsAgent
from storage.decisions import APP_HOLD

TOKEN = "api-token-" + "y" * 24
CLIENT = Path(__file__).resolve().parents[1] / "agui" / "client.mjs"


@dataclass
class Endpoint:
    bot: Harness
    url: str


@pytest.fixture
async def endpoint_for(make_bot: Any) -> AsyncIterator[Callable[..., Awaitable[Endpoint]]]:
    """Starts the endpoint of a bot whose agent has ``policy`` (the harness's default)."""
    node = shutil.which("node")
    installed = CLIENT.parent / "node_modules" / "@ag-ui" / "client" / "package.json"
    if node is None or not installed.exists():
        pytest.fail("Node and @ag-ui/client are needed: ./run test installs both", pytrace=False)
    runners: list[web.AppRunner] = []

    async def start(policy: Policy | None = None, spec: AgentSpec | None = None) -> Endpoint:
        bot: Harness = await make_bot(policy, spec=spec)
        # Served as `signoff serve` serves it (a handler is not cancelled when its client
        # goes away), not as aiohttp's TestServer does.
        runner = web.AppRunner(operator_app(bot.services, api_token=SecretStr(TOKEN)))
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = runner.addresses[0][1]
        return Endpoint(bot=bot, url=f"http://127.0.0.1:{port}{AGUI_PATH}/cleanup")

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def endpoint(endpoint_for: Callable[..., Awaitable[Endpoint]]) -> Endpoint:
    return await endpoint_for()


async def _client(url: str, thread: str, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the real AG-UI client through ``plan``; what it saw at each step."""
    process = await asyncio.create_subprocess_exec(
        "node",
        str(CLIENT),
        url,
        TOKEN,
        thread,
        json.dumps(plan),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


async def test_run_interrupt_resume_success_with_the_real_client(endpoint: Endpoint) -> None:
    first, second = await _client(
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
    _, cancelled = await _client(
        endpoint.url,
        "thread-cancel",
        [{"prompt": "clean up"}, {"answer": {"status": "cancelled", "payload": "not today"}}],
    )
    assert cancelled["error"] is None, cancelled
    assert cancelled["finished"]["outcome"] == {"type": "success"}, cancelled
    assert "not today" in cancelled["finished"]["result"]
    assert endpoint.bot.tool_log.calls == []


async def test_answering_twice_gets_a_clear_run_error(endpoint: Endpoint) -> None:
    first, _ = await _client(
        endpoint.url,
        "thread-twice",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    late = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    [again] = await _client(endpoint.url, "thread-twice", [{"resume": [late]}])
    assert again["finished"] is None
    assert again["error"]["code"] == "decided_elsewhere"
    assert "already approved in the app" in again["error"]["message"]
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


async def test_the_app_answers_first_and_the_card_says_it_was_decided_in_the_app(
    endpoint: Endpoint,
) -> None:
    bot = endpoint.bot
    _, second = await _client(
        endpoint.url,
        "thread-app-first",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert second["finished"]["outcome"] == {"type": "success"}
    # The interrupt was also a card in the policy's channel; the app's answer decided it.
    card = bot.posted(0)
    assert card["channel"] == CHANNEL and "delete_files" in card["text"]
    await bot.slack.wait_for(
        lambda: any(
            "decided in the app" in str(u["blocks"]) for u in bot.slack.called("chat.update")
        ),
        what="the card decided in the app",
    )
    value = card["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)  # too late: nothing more happens
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "in the app" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]  # once: no resume job
    trail = await bot.services.storage.audit.read(count=100)
    assert [e.event for e in trail if e.event == "decided_in_app"] == ["decided_in_app"]


async def test_a_slack_click_first_and_the_apps_late_answer_gets_a_run_error(
    endpoint: Endpoint,
) -> None:
    bot = endpoint.bot
    [first] = await _client(endpoint.url, "thread-slack-first", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()  # the resume worker ran the rest
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    [late] = await _client(endpoint.url, "thread-slack-first", [{"resume": [answer]}])
    assert late["finished"] is None and late["error"]["code"] == "decided_elsewhere"
    assert f"approved in Slack by {ALICE}" in late["error"]["message"]
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_an_apps_answer_while_a_click_waits_out_its_undo_window_names_the_click(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), undo_window=timedelta(seconds=30))
    endpoint = await endpoint_for(policy)
    bot = endpoint.bot
    interrupt, rid = await _asked(endpoint, "thread-held")
    await bot.click(ids.APPROVE, bot.posted(0)["blocks"][-1]["elements"][0]["value"], user=ALICE)
    await bot.slack.wait_calls("chat.update")  # the card shows the approval it holds
    denial = {"interruptId": interrupt["id"], "status": "cancelled"}
    [late] = await _client(endpoint.url, "thread-held", [{"resume": [denial]}])
    assert late["error"]["code"] == "decided_elsewhere", late
    assert f"already approved in Slack by {ALICE} (final at " in late["error"]["message"]
    record = await bot.services.storage.queries.get(rid)
    assert record is not None and record.held is not None and record.held.by == ALICE
    assert bot.tool_log.calls == []


async def _asked(endpoint: Endpoint, thread: str) -> tuple[dict[str, Any], str]:
    """Start a run on ``thread``: its one interrupt, and the id of the card asking it."""
    [first] = await _client(endpoint.url, thread, [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    value = endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    return interrupt, endpoint.bot.record_id(value)


async def _answer(endpoint: Endpoint, thread: str, iid: str, **answer: Any) -> dict[str, Any]:
    [seen] = await _client(endpoint.url, thread, [{"resume": [{"interruptId": iid, **answer}]}])
    return seen


async def _pending(endpoint: Endpoint, rid: str) -> bool:
    record = await endpoint.bot.services.storage.queries.get(rid)
    return record is not None and record.state == "pending" and record.decided_by is None


@pytest.mark.parametrize(
    "policy",
    [
        Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2),
        Policy(channel=CHANNEL, users=(ALICE, BOB), undo_window=timedelta(seconds=30)),
    ],
    ids=["quorum", "undo-window"],
)
async def test_a_card_that_wants_people_to_approve_takes_only_a_denial_from_the_app(
    endpoint_for: Callable[..., Awaitable[Endpoint]], policy: Policy
) -> None:
    endpoint = await endpoint_for(policy)
    interrupt, rid = await _asked(endpoint, "thread-people")
    approve = await _answer(
        endpoint, "thread-people", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert approve["finished"] is None and approve["error"]["code"] == "approve_in_slack"
    assert await _pending(endpoint, rid)
    denied = await _answer(endpoint, "thread-people", interrupt["id"], status="cancelled")
    assert denied["error"] is None and denied["finished"]["outcome"] == {"type": "success"}
    record = await endpoint.bot.services.storage.queries.get(rid)
    assert record is not None and record.state == "denied"
    assert endpoint.bot.tool_log.calls == []


async def test_an_answer_the_card_does_not_take_changes_nothing_and_a_good_one_then_runs_once(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(
        Policy(channel=CHANNEL, users=(ALICE, BOB), decisions=("approve", "reject", "edit"))
    )
    interrupt, rid = await _asked(endpoint, "thread-bad")
    iid = interrupt["id"]
    bad_edit = {"type": "edit", "args": {"paths": 5}}
    seen = await _answer(endpoint, "thread-bad", iid, status="resolved", payload=bad_edit)
    assert seen["error"]["code"] == "invalid_edit" and "delete_files" in seen["error"]["message"]
    reply = {"type": "respond", "message": "done by hand"}
    seen = await _answer(endpoint, "thread-bad", iid, status="resolved", payload=reply)
    assert seen["error"]["code"] == "not_offered" and "'respond'" in seen["error"]["message"]
    assert await _pending(endpoint, rid)
    assert endpoint.bot.slack.called("chat.update") == []  # the card was never changed
    good_edit = {"type": "edit", "args": {"paths": ["/tmp/a"]}}
    seen = await _answer(endpoint, "thread-bad", iid, status="resolved", payload=good_edit)
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a"]}]


async def test_an_approval_after_the_cards_expiry_is_refused_before_the_sweep(
    endpoint: Endpoint,
) -> None:
    interrupt, rid = await _asked(endpoint, "thread-late")
    endpoint.bot.clock.advance(timedelta(hours=25))  # the policy's 24 h have passed
    seen = await _answer(
        endpoint, "thread-late", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert seen["error"]["code"] == "expired" and "cancel it" in seen["error"]["message"]
    assert await _pending(endpoint, rid)  # left for the sweep, which denies it
    assert endpoint.bot.tool_log.calls == []


async def test_without_a_card_the_policy_still_says_which_decisions_the_app_may_send(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(Policy(users=(ALICE,), decisions=("approve", "reject")))
    [first] = await _client(endpoint.url, "thread-narrow", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    assert interrupt["responseSchema"]["properties"]["type"]["enum"] == ["approve", "reject"]
    assert endpoint.bot.slack.called("chat.postMessage") == []  # no channel: no card
    edit = {"type": "edit", "args": {"paths": ["/tmp/a"]}}
    seen = await _answer(
        endpoint, "thread-narrow", interrupt["id"], status="resolved", payload=edit
    )
    assert seen["finished"] is None and "offers ['approve', 'reject'], not 'edit'" in str(
        seen["error"]
    )
    assert endpoint.bot.tool_log.calls == []
    approve = {"type": "approve"}
    seen = await _answer(
        endpoint, "thread-narrow", interrupt["id"], status="resolved", payload=approve
    )
    assert seen["error"] is None and endpoint.bot.tool_log.calls == [
        {"paths": ["/tmp/a", "/tmp/b"]}
    ]
    assert await endpoint.bot.services.storage.audit.read(count=100) == []  # decided in the app


async def test_a_late_app_answer_to_a_quorum_names_everyone_who_approved(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    bot = endpoint.bot
    interrupt, _ = await _asked(endpoint, "thread-quorum")
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.finished()
    late = await _answer(
        endpoint, "thread-quorum", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert late["error"]["code"] == "decided_elsewhere"
    assert f"approved in Slack by {ALICE}, {BOB}" in late["error"]["message"]


async def _raw(endpoint: Endpoint, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one run request as any app could send it, bypassing the client's
    own checks."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(endpoint.url, json=body, headers=headers) as response,
    ):
        text = await response.text()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


@pytest.mark.parametrize("second", ["the same interrupt", "an unknown interrupt"])
async def test_a_resume_the_run_refuses_decides_no_card(endpoint: Endpoint, second: str) -> None:
    interrupt, rid = await _asked(endpoint, "thread-refused")
    good = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    other = good if second == "the same interrupt" else {**good, "interruptId": "int_nosuch"}
    body = {"threadId": "thread-refused", "runId": "r2", "resume": [good, other]}
    events = await _raw(endpoint, body)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"], events
    assert await _pending(endpoint, rid)
    assert endpoint.bot.slack.called("chat.update") == []
    seen = await _answer(
        endpoint, "thread-refused", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_a_click_between_the_apps_answers_loses_none_of_them(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app answers cards A and B; a click decides B after the app decided A. The
    app's resume is refused, and the resume worker runs the run on with both."""
    deleted: list[str] = []
    endpoint = await endpoint_for(spec=deletions(deleted, ["/tmp/a", "/tmp/b"], batch=False))
    bot = endpoint.bot
    [first] = await _client(endpoint.url, "thread-race", [{"prompt": "clean up"}])
    interrupts = first["finished"]["outcome"]["interrupts"]
    await bot.slack.wait_calls("chat.postMessage", 2)
    card_a, card_b = (
        bot.record_id(bot.posted(0)["blocks"][-1]["elements"][0]["value"]),
        bot.posted(1),
    )
    store = bot.services.storage.interrupts
    decide_in_app = store.decide_in_app

    async def then_a_click_on_b(rid: str, *args: Any, **kwargs: Any) -> Any:
        outcome = await decide_in_app(rid, *args, **kwargs)
        if rid == card_a:
            ts_b = bot.slack.answers("chat.postMessage")[1]["ts"]
            value_b = card_b["blocks"][-1]["elements"][0]["value"]
            await bot.click(ids.APPROVE, value_b, user=ALICE, message_ts=ts_b)
            await bot.slack.wait_for(
                lambda: any(u["ts"] == ts_b for u in bot.slack.called("chat.update")),
                what="card B decided by the click",
            )
        return outcome

    store.decide_in_app = then_a_click_on_b  # type: ignore[method-assign,assignment]
    answers = [
        {"interruptId": i["id"], "status": "resolved", "payload": {"type": "approve"}}
        for i in interrupts
    ]
    [seen] = await _client(endpoint.url, "thread-race", [{"resume": answers}])
    assert seen["finished"] is None and seen["error"]["code"] == "decided_elsewhere"
    assert "your answers to" in seen["error"]["message"], seen["error"]
    await bot.slack.wait_for(lambda: sorted(deleted) == ["/tmp/a", "/tmp/b"], what="both calls")
    record = await bot.services.storage.queries.get(card_a)
    assert record is not None and record.state == "approved" and record.decided_by == "app"


async def test_a_card_decided_in_slack_goes_on_with_the_apps_answers_to_the_others(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """Cards A and B: A is approved in Slack. The app's answer to A is refused, saying to
    answer the rest; its answer to B alone runs the run on with both, once."""
    deleted: list[str] = []
    endpoint = await endpoint_for(spec=deletions(deleted, ["/tmp/a", "/tmp/b"], batch=False))
    bot = endpoint.bot
    [first] = await _client(endpoint.url, "thread-mixed", [{"prompt": "clean up"}])
    interrupts = first["finished"]["outcome"]["interrupts"]
    await bot.slack.wait_calls("chat.postMessage", 2)
    value_a = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value_a, user=ALICE)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == bot.message_ts(0) for u in bot.slack.called("chat.update")),
        what="card A approved in Slack",
    )
    card_a = await bot.services.storage.queries.get(bot.record_id(value_a))
    assert card_a is not None and card_a.state == "approved"
    a, b = sorted(interrupts, key=lambda i: i["id"] != card_a.runtime_interrupt.id)
    deny_b = {"interruptId": b["id"], "status": "resolved", "payload": {"type": "reject"}}
    both = [{"interruptId": a["id"], "status": "resolved", "payload": {"type": "reject"}}, deny_b]
    [refused] = await _client(endpoint.url, "thread-mixed", [{"resume": both}])
    assert refused["error"]["code"] == "decided_elsewhere", refused
    assert f"approved in Slack by {ALICE}" in refused["error"]["message"]
    assert "answer the thread's other interrupts without it" in refused["error"]["message"]
    [seen] = await _client(endpoint.url, "thread-mixed", [{"resume": [deny_b]}])
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}, seen
    call_a = card_a.runtime_interrupt.tool_call
    assert call_a is not None and deleted == [call_a.args["path"]]
    card_b = await bot.services.storage.queries.get(
        bot.record_id(bot.posted(1)["blocks"][-1]["elements"][0]["value"])
    )
    assert card_b is not None and card_b.state == "denied" and card_b.decided_by == "app"
    storage = bot.services.storage
    streams = [storage.keys.resume_stream(shard) for shard in storage.keys.all_shards]
    assert [await storage.client.raw.xlen(s) for s in streams] == [0] * len(streams)  # no job


def _asks_itself(ran: list[list[str]], policy: Policy) -> AgentSpec:
    """An agent whose tool asks people itself (``context.interrupt``) before it deletes."""

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete files once people confirm."""
        answer = context.interrupt("confirm", reason={"paths": paths})
        if not isinstance(answer, Decision) and answer != {"type": "approve"}:
            return "not deleted"
        ran.append(paths)
        return f"deleted {len(paths)}"

    def build(store: SessionStore) -> Agent:
        model = OneToolModel("delete_files", {"paths": ["/srv/prod"]})
        return Agent(model=model, tools=[delete_files], session_store=store, name="cleanup")

    return AgentSpec(name="cleanup", build=build, policy=policy)


async def test_a_tools_own_interrupt_on_a_quorum_card_takes_only_a_denial_from_the_app(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    ran: list[list[str]] = []
    quorum = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    endpoint = await endpoint_for(spec=_asks_itself(ran, quorum))
    interrupt, rid = await _asked(endpoint, "thread-own")
    seen = await _answer(
        endpoint, "thread-own", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert seen["finished"] is None and seen["error"]["code"] == "approve_in_slack", seen
    assert await _pending(endpoint, rid) and ran == []
    seen = await _answer(
        endpoint, "thread-own", interrupt["id"], status="resolved", payload="sure, go ahead"
    )
    assert seen["error"]["code"] == "not_offered", seen  # the card offers no reply
    seen = await _answer(
        endpoint, "thread-own", interrupt["id"], status="resolved", payload={"type": "reject"}
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}, seen
    record = await endpoint.bot.services.storage.queries.get(rid)
    assert record is not None and (record.state, record.decided_by) == ("denied", "app")
    assert ran == []


async def test_an_agui_run_of_a_strands_agent_is_a_slack_card_too(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """An adapted framework's thread keeps only its interrupts (no last result): its
    interrupts are cards all the same, where its policy names a channel."""
    deleted: list[list[str]] = []
    endpoint = await endpoint_for(spec=gated_spec(deleted))
    url = endpoint.url.replace("/cleanup", "/st-cleanup")
    [first] = await _client(url, "thread-strands", [{"prompt": "clean up"}])
    assert first["finished"]["outcome"]["type"] == "interrupt", first
    await endpoint.bot.slack.wait_calls("chat.postMessage")
    [card] = endpoint.bot.slack.called("chat.postMessage")
    assert card["channel"] == CHANNEL and "delete_files" in card["text"]
    assert deleted == []


async def test_an_app_run_that_fails_after_its_answer_is_recorded_is_run_on_by_the_worker(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app's answer decided the card, then its run failed (the model, after the
    approved tool ran): the worker runs the thread on, and the tool does not run again."""
    ran: list[list[str]] = []
    spec = AgentSpec(
        name="st-flaky",
        build=lambda sessions: StrandsAgent(failing_after_the_tool(ran), session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    endpoint = await endpoint_for(spec=spec)
    bot, url = endpoint.bot, endpoint.url.replace("/cleanup", "/st-flaky")
    _, second = await _client(
        url,
        "thread-app-fails",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert second["finished"] is None and second["error"]["code"] == "internal_error"
    assert "Signoff's resume worker runs the thread on" in second["error"]["message"]
    assert (await bot.finished()).startswith("Finished: done (success): deleted 1")
    assert ran == [["/tmp/a"]]


async def test_an_app_that_goes_away_mid_run_does_not_stop_the_run(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    slow = SlowDelete()
    spec = AgentSpec(
        name="st-slow",
        build=lambda sessions: StrandsAgent(slow.agent, session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    endpoint = await endpoint_for(spec=spec)
    bot, url = endpoint.bot, endpoint.url.replace("/cleanup", "/st-slow")
    [first] = await _client(url, "thread-gone", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    body = {"threadId": "thread-gone", "runId": "r2", "resume": [answer]}
    async with aiohttp.ClientSession() as http:
        response = await http.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert b"RUN_STARTED" in await response.content.readline()
        while slow.inside < 1:
            await asyncio.wait_for(slow.changed.wait(), 10)
            slow.changed.clear()
        response.close()  # the app goes away while the approved tool runs
    slow.release.set()
    assert (await bot.finished()).startswith("Finished: done (success): deleted")
    assert slow.ran == [["/tmp/a"]]


async def test_a_round_whose_app_died_after_answering_is_run_on_by_the_worker(
    endpoint: Endpoint,
) -> None:
    """The app's answer decided the card, then its process died before running the round:
    once its hold lapses, the scheduler hands the round to the resume worker."""
    bot = endpoint.bot
    [first] = await _client(endpoint.url, "thread-app-died", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    body = {"threadId": "thread-app-died", "runId": "r2", "resume": [answer]}
    answers = await answer_cards(bot.services, bot.services.registry.agent("cleanup"), body)
    assert answers.refusal is None and answers.app_round is not None
    await Scheduler(bot.services).tick()
    assert bot.tool_log.calls == []  # the app holds the round: nothing is handed over yet

    bot.clock.advance(APP_HOLD + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    assert "deleted 2 file(s)" in await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_the_cards_are_posted_before_the_app_hears_the_run_stopped(
    endpoint: Endpoint,
) -> None:
    """An app may answer the moment it reads RUN_FINISHED: the cards are there by then."""
    prompt = {"runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "clean up"}]}
    body = {"threadId": "thread-quick", **prompt}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(endpoint.url, json=body, headers=headers) as response,
    ):
        async for line in response.content:
            if b'"RUN_FINISHED"' in line:
                assert len(endpoint.bot.slack.called("chat.postMessage")) == 1
                break
        else:
            raise AssertionError("no RUN_FINISHED")


async def test_an_escalated_card_takes_the_apps_answer_and_the_run_goes_on(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The card escalated when its first wait ran out: it waits another hour, and the
    app's approval within it runs the call (the card's expiry counts, not the first one)."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(milliseconds=1),
        on_expiry=(Escalate(channel=CHANNEL, users=(BOB,), expires_after=timedelta(hours=1)),),
        reminders=None,
    )
    endpoint = await endpoint_for(policy)
    [first] = await _client(endpoint.url, "thread-escalated", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    endpoint.bot.clock.advance(timedelta(seconds=1))
    await Scheduler(endpoint.bot.services).tick()
    record = await endpoint.bot.services.storage.queries.get(
        endpoint.bot.record_id(endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"])
    )
    assert record is not None and record.escalated
    seen = await _answer(
        endpoint,
        "thread-escalated",
        interrupt["id"],
        status="resolved",
        payload={"type": "approve"},
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def _trust_next_call(bot: Harness, paths: list[str]) -> None:
    """Alice trusts ``delete_files`` of ``paths`` in the channel: its card is approved in
    her name the moment it is posted."""
    now = bot.clock.now()
    await bot.services.storage.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel=CHANNEL,
        args_digest=args_digest({"paths": paths}),
        granted_by=ALICE,
        granted_at=now,
        expires_at=now + timedelta(hours=1),
        record_id="run_earlier/int_earlier",
    )


async def test_a_trusted_call_after_a_round_the_app_ran_runs_as_its_own_round(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app answers the first card; its run asks a call a trust covers, approved as its
    card is posted: the resume worker runs that round alone, and the run ends."""
    log = ToolLog()
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB))
    endpoint = await endpoint_for(
        policy, spec=cleanup_spec(log, policy, then=({"paths": ["/tmp/c"]},))
    )
    await _trust_next_call(endpoint.bot, ["/tmp/c"])
    _, second = await _client(
        endpoint.url,
        "thread-trusted",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert second["error"] is None and second["finished"]["outcome"]["type"] == "interrupt"
    assert (await endpoint.bot.finished()).startswith("Finished")
    assert log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]


async def test_an_approval_sent_twice_for_one_strands_interrupt_runs_nothing(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The card takes no approval from the app (it wants two people): repeating the
    answer in one resume must not get it past the card's checks to the agent."""
    deleted: list[list[str]] = []
    quorum = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    endpoint = await endpoint_for(spec=dataclasses.replace(gated_spec(deleted), policy=quorum))
    url = endpoint.url.replace("/cleanup", "/st-cleanup")
    [first] = await _client(url, "thread-twice", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    [seen] = await _client(url, "thread-twice", [{"resume": [approve, approve]}])
    assert seen["finished"] is None and seen["error"] is not None
    assert deleted == []
    value = endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    assert await _pending(endpoint, endpoint.bot.record_id(value))


async def test_a_strands_run_on_the_longest_thread_id_taken_asks_on_a_card(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """An adapted agent's run is named after its thread: a thread id the endpoint takes
    must make a run id storage takes, or the run stops with no card and a cut stream."""
    deleted: list[list[str]] = []
    endpoint = await endpoint_for(spec=gated_spec(deleted))
    url = endpoint.url.replace("/cleanup", "/st-cleanup")
    thread = "t" * 128
    [first] = await _client(url, thread, [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    [card] = endpoint.bot.slack.called("chat.postMessage")
    assert "delete_files" in card["text"]
    approve = {"status": "resolved", "payload": {"type": "approve"}}
    seen = await _answer(Endpoint(endpoint.bot, url), thread, interrupt["id"], **approve)
    assert seen["finished"]["outcome"] == {"type": "success"}, seen
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_an_app_without_cards_retrying_with_a_denial_is_told_its_approved_tool_ran(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """No cards: the app's approval ran the tool, then the model failed. Sent again as a
    denial, the answer is refused, saying the tool ran on the approval; the approval sent
    again goes on, and the tool does not run twice."""
    ran: list[list[str]] = []
    spec = AgentSpec(
        name="st-flaky",
        build=lambda sessions: StrandsAgent(failing_after_the_tool(ran), session_store=sessions),
        policy=Policy(users=(ALICE,)),
    )
    endpoint = await endpoint_for(spec=spec)
    url = endpoint.url.replace("/cleanup", "/st-flaky")
    asked, failed, denied, approved = await _client(
        url,
        "thread-app-retries",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
            {"answer": {"status": "resolved", "payload": {"type": "reject", "message": "no"}}},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    [iid] = asked["pending"]
    assert failed["finished"] is None and failed["error"] is not None
    assert f"{iid} delete_files (it ran): approve" in denied["error"]["message"]
    assert approved["finished"]["result"] == "done (success): deleted 1"
    assert ran == [["/tmp/a"]]
    assert endpoint.bot.slack.called("chat.postMessage") == []
