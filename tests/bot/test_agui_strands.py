"""A Strands agent served over AG-UI asks on Slack cards as any agent does."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from agui_endpoint import Endpoint, answer_one, run_client, still_pending
from harness import ALICE, BOB, CHANNEL
from strands_agents import SlowDelete, gated_spec

from bot.agents.policy import AgentSpec, Policy
from signoff.strands import StrandsAgent


async def test_an_agui_run_of_a_strands_agent_is_a_slack_card_too(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """An adapted framework's thread keeps only its interrupts (no last result): its
    interrupts are cards all the same, where its policy names a channel."""
    deleted: list[list[str]] = []
    endpoint = await endpoint_for(spec=gated_spec(deleted))
    url = endpoint.url.replace("/cleanup", "/st-cleanup")
    [first] = await run_client(url, "thread-strands", [{"prompt": "clean up"}])
    assert first["finished"]["outcome"]["type"] == "interrupt", first
    await endpoint.bot.slack.wait_calls("chat.postMessage")
    [card] = endpoint.bot.slack.called("chat.postMessage")
    assert card["channel"] == CHANNEL and "delete_files" in card["text"]
    assert deleted == []


async def test_an_approval_sent_twice_for_one_strands_interrupt_runs_nothing(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The card takes no approval from the app (it wants two people): repeating the
    answer in one resume must not get it past the card's checks to the agent."""
    deleted: list[list[str]] = []
    quorum = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    endpoint = await endpoint_for(spec=dataclasses.replace(gated_spec(deleted), policy=quorum))
    url = endpoint.url.replace("/cleanup", "/st-cleanup")
    [first] = await run_client(url, "thread-twice", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    [seen] = await run_client(url, "thread-twice", [{"resume": [approve, approve]}])
    assert seen["finished"] is None and seen["error"] is not None
    assert deleted == []
    value = endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    assert await still_pending(endpoint, endpoint.bot.record_id(value))


async def test_a_strands_run_on_the_longest_thread_id_taken_asks_on_a_card(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """An adapted agent's run is named after its thread: a thread id the endpoint takes
    must make a run id storage takes, or the run stops with no card and a cut stream."""
    deleted: list[list[str]] = []
    endpoint = await endpoint_for(spec=gated_spec(deleted))
    url = endpoint.url.replace("/cleanup", "/st-cleanup")
    thread = "t" * 128
    [first] = await run_client(url, thread, [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    [card] = endpoint.bot.slack.called("chat.postMessage")
    assert "delete_files" in card["text"]
    approve = {"status": "resolved", "payload": {"type": "approve"}}
    seen = await answer_one(Endpoint(endpoint.bot, url), thread, interrupt["id"], **approve)
    assert seen["finished"]["outcome"] == {"type": "success"}, seen
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_a_strands_approval_two_clients_send_at_once_without_a_card_runs_the_tool_once(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """No card (the policy names no channel): only the holds on the thread (the app's
    round's, the adapter's lease) stand between two resumes the app sent at once. The tool
    runs once; the other resume is told why."""
    tool_gate = SlowDelete()
    spec = AgentSpec(
        name="st-slow",
        build=lambda sessions: StrandsAgent(tool_gate.agent, session_store=sessions),
        policy=Policy(users=(ALICE,)),
    )
    endpoint = await endpoint_for(spec=spec)
    url = endpoint.url.replace("/cleanup", "/st-slow")
    [first] = await run_client(url, "thread-two-apps", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}

    async def app() -> dict[str, Any]:
        [seen] = await run_client(url, "thread-two-apps", [{"resume": [approve]}])
        return seen

    seen = await tool_gate.two_at_once(app)
    assert tool_gate.ran == [["/tmp/a"]]
    won = [s for s in seen if s["finished"] is not None]
    lost = [s["error"] for s in seen if s["finished"] is None]
    assert [s["finished"]["outcome"] for s in won] == [{"type": "success"}], seen
    assert len(lost) == 1 and lost[0]["code"], seen
    assert endpoint.bot.slack.called("chat.postMessage") == []


async def test_another_agents_resume_of_a_strands_run_is_refused_and_changes_nothing(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """An app chooses its thread ids and may use one with two agents: the second agent
    answering the first's interrupt must not run its own tool in the first's run, nor
    decide the first's card."""
    first_ran: list[list[str]] = []
    second_ran: list[list[str]] = []
    endpoint = await endpoint_for(
        spec=gated_spec(first_ran, name="st-first"),
        also=(gated_spec(second_ran, name="st-second"),),
    )
    first_url = endpoint.url.replace("/cleanup", "/st-first")
    [asked] = await run_client(first_url, "conversation-1", [{"prompt": "clean up"}])
    [interrupt] = asked["finished"]["outcome"]["interrupts"]
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    second_url = endpoint.url.replace("/cleanup", "/st-second")
    [seen] = await run_client(second_url, "conversation-1", [{"resume": [approve]}])
    assert seen["finished"] is None and "st-first" in seen["error"]["message"], seen
    assert first_ran == [] and second_ran == []
    value = endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    assert await still_pending(endpoint, endpoint.bot.record_id(value))
    seen = await answer_one(
        Endpoint(endpoint.bot, first_url),
        "conversation-1",
        interrupt["id"],
        status="resolved",
        payload={"type": "approve"},
    )
    assert seen["finished"]["outcome"] == {"type": "success"}, seen
    assert first_ran == [["/tmp/a", "/tmp/b"]] and second_ran == []
