"""What a card takes from the app: only what the card itself would take, checked before
anything changes; an answer it refuses leaves the card pending and the run where it was."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest
from agui_endpoint import Endpoint, answer_one, ask_one, run_client, run_raw, still_pending
from fakes import OneToolModel
from harness import ALICE, BOB, CHANNEL
from strands_agents import failing_after_the_tool

from agent_runtime import Agent, Decision, ToolContext, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from signoff.strands import StrandsAgent


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
    interrupt, rid = await ask_one(endpoint, "thread-people")
    approve = await answer_one(
        endpoint, "thread-people", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert approve["finished"] is None and approve["error"]["code"] == "approve_in_slack"
    assert await still_pending(endpoint, rid)
    denied = await answer_one(endpoint, "thread-people", interrupt["id"], status="cancelled")
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
    interrupt, rid = await ask_one(endpoint, "thread-bad")
    iid = interrupt["id"]
    bad_edit = {"type": "edit", "args": {"paths": 5}}
    seen = await answer_one(endpoint, "thread-bad", iid, status="resolved", payload=bad_edit)
    assert seen["error"]["code"] == "invalid_edit" and "delete_files" in seen["error"]["message"]
    reply = {"type": "respond", "message": "done by hand"}
    seen = await answer_one(endpoint, "thread-bad", iid, status="resolved", payload=reply)
    assert seen["error"]["code"] == "not_offered" and "'respond'" in seen["error"]["message"]
    assert await still_pending(endpoint, rid)
    assert endpoint.bot.slack.called("chat.update") == []  # the card was never changed
    good_edit = {"type": "edit", "args": {"paths": ["/tmp/a"]}}
    seen = await answer_one(endpoint, "thread-bad", iid, status="resolved", payload=good_edit)
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a"]}]
    assert endpoint.bot.services.metrics.decisions == {"edited": 1}  # the app's, counted once


async def test_an_edit_of_countless_unknown_arguments_is_refused_naming_the_first_alone(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """Not one problem per key: a RUN_ERROR of megabytes, after half a second of the
    server's event loop spent building it."""
    endpoint = await endpoint_for(
        Policy(channel=CHANNEL, users=(ALICE, BOB), decisions=("approve", "reject", "edit"))
    )
    interrupt, rid = await ask_one(endpoint, "thread-keys")
    args = {"paths": ["/tmp/a"], **{f"k{i}": 1 for i in range(20_000)}}
    answer = {"interruptId": interrupt["id"], "payload": {"type": "edit", "args": args}}
    events = await run_raw(endpoint, {"threadId": "thread-keys", "runId": "r", "resume": [answer]})
    assert [(e["type"], e.get("code"), e.get("message")) for e in events] == [
        ("RUN_STARTED", None, None),
        (
            "RUN_ERROR",
            "invalid_edit",
            "these arguments do not fit delete_files: invalid input for delete_files: k0: "
            "Extra inputs are not permitted",
        ),
    ]
    assert await still_pending(endpoint, rid)
    assert endpoint.bot.tool_log.calls == []


async def test_an_approval_after_the_cards_expiry_is_refused_before_the_sweep(
    endpoint: Endpoint,
) -> None:
    interrupt, rid = await ask_one(endpoint, "thread-late")
    endpoint.bot.clock.advance(timedelta(hours=25))  # the policy's 24 h have passed
    seen = await answer_one(
        endpoint, "thread-late", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert seen["error"]["code"] == "expired" and "cancel it" in seen["error"]["message"]
    assert await still_pending(endpoint, rid)  # left for the sweep, which denies it
    assert endpoint.bot.tool_log.calls == []


async def test_without_a_card_the_policy_still_says_which_decisions_the_app_may_send(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(Policy(users=(ALICE,), decisions=("approve", "reject")))
    [first] = await run_client(endpoint.url, "thread-narrow", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    assert interrupt["responseSchema"]["properties"]["type"]["enum"] == ["approve", "reject"]
    assert endpoint.bot.slack.called("chat.postMessage") == []  # no channel: no card
    edit = {"type": "edit", "args": {"paths": ["/tmp/a"]}}
    seen = await answer_one(
        endpoint, "thread-narrow", interrupt["id"], status="resolved", payload=edit
    )
    assert seen["finished"] is None and "offers ['approve', 'reject'], not 'edit'" in str(
        seen["error"]
    )
    assert endpoint.bot.tool_log.calls == []
    approve = {"type": "approve"}
    seen = await answer_one(
        endpoint, "thread-narrow", interrupt["id"], status="resolved", payload=approve
    )
    assert seen["error"] is None and endpoint.bot.tool_log.calls == [
        {"paths": ["/tmp/a", "/tmp/b"]}
    ]
    assert await endpoint.bot.services.storage.audit.read(count=100) == []  # decided in the app


@pytest.mark.parametrize("second", ["the same interrupt", "an unknown interrupt"])
async def test_a_resume_the_run_refuses_decides_no_card(endpoint: Endpoint, second: str) -> None:
    interrupt, rid = await ask_one(endpoint, "thread-refused")
    good = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    other = good if second == "the same interrupt" else {**good, "interruptId": "int_nosuch"}
    body = {"threadId": "thread-refused", "runId": "r2", "resume": [good, other]}
    events = await run_raw(endpoint, body)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"], events
    assert await still_pending(endpoint, rid)
    assert endpoint.bot.slack.called("chat.update") == []
    seen = await answer_one(
        endpoint, "thread-refused", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


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
    interrupt, rid = await ask_one(endpoint, "thread-own")
    seen = await answer_one(
        endpoint, "thread-own", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert seen["finished"] is None and seen["error"]["code"] == "approve_in_slack", seen
    assert await still_pending(endpoint, rid) and ran == []
    seen = await answer_one(
        endpoint, "thread-own", interrupt["id"], status="resolved", payload="sure, go ahead"
    )
    assert seen["error"]["code"] == "not_offered", seen  # the card offers no reply
    seen = await answer_one(
        endpoint, "thread-own", interrupt["id"], status="resolved", payload={"type": "reject"}
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}, seen
    record = await endpoint.bot.services.storage.queries.get(rid)
    assert record is not None and (record.state, record.decided_by) == ("denied", "app")
    assert ran == []


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
    asked, failed, denied, approved = await run_client(
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
