"""What an approved Strands call did is posted in its card's thread and audited once, even
when the worker telling it died."""

from __future__ import annotations

from typing import Any

import pytest
from adapter_checks import first_telling_dies, tool_audits
from harness import ALICE, CAROL, CHANNEL, Harness
from strands import Agent, tool
from strands.vended_interventions.hitl import HumanInTheLoop
from strands_agents import DeletesTwiceWithOneCallId, failing_after_the_tool, gated_spec

from bot.agents.policy import AgentSpec, Policy
from signoff.strands import StrandsAgent


async def test_what_an_approved_strands_call_did_is_told_and_audited_once(
    make_bot: Any,
) -> None:
    """As for Signoff's own agents: the approved call's outcome is posted in the card's
    thread and audited (``tool_ran``), tied to the decision, even when the model call after
    it fails and the resume is retried."""
    ran: list[list[str]] = []
    spec = AgentSpec(
        name="st-told",
        build=lambda sessions: StrandsAgent(failing_after_the_tool(ran), session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec, reclaim_after=0.05)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done (success): deleted 1")
    assert ran == [["/tmp/a"]]
    assert bot.thread().count("delete_files: deleted 1") == 1
    trail = await bot.services.storage.audit.read(count=100)
    [told] = [e for e in trail if e.event == "tool_ran"]
    assert told.record_id == bot.record_id(value) and told.detail == "delete_files: deleted 1"


async def test_the_second_approved_call_under_a_reused_call_id_is_audited_too(
    make_bot: Any,
) -> None:
    """A provider numbering its calls per turn runs ``use_1`` twice, each approved on its
    own card: each run is audited, the second not taken for a retelling of the first."""
    deleted: list[list[str]] = []
    spec = gated_spec(
        deleted,
        name="st-twice-told",
        model=DeletesTwiceWithOneCallId,
        says=lambda paths: f"deleted {paths[0]}",
    )
    bot: Harness = await make_bot(spec=spec)
    first = await bot.start(requested_by=CAROL)
    await bot.decide("approve", first, user=ALICE)
    await bot.slack.wait_for(lambda: "/tmp/b" in str(bot.slack.called("chat.postMessage")[-1]))
    second = bot.slack.called("chat.postMessage")[-1]["blocks"][-1]["elements"][0]["value"]
    await bot.decide("approve", second, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.finished()
    trail = await bot.services.storage.audit.read(count=100)
    told = [(e.record_id, e.detail) for e in trail if e.event == "tool_ran"]
    assert told == [
        (bot.record_id(first), "delete_files: deleted /tmp/a"),
        (bot.record_id(second), "delete_files: deleted /tmp/b"),
    ]


async def test_each_call_strands_human_in_the_loop_let_run_is_audited_under_its_card(
    make_bot: Any,
) -> None:
    """Strands' own intervention asks under an id of its own: each call it let run is
    still audited under the card that approved it, the second (under a reused call id)
    not taken for a retelling of the first."""
    deleted: list[list[str]] = []

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {paths[0]}"

    def make_agent() -> Agent:
        return Agent(
            model=DeletesTwiceWithOneCallId(),
            tools=[delete_files],
            interventions=[HumanInTheLoop()],
            callback_handler=None,
        )

    spec = AgentSpec(
        name="st-hitl-told",
        build=lambda sessions: StrandsAgent(make_agent, session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec)
    first = await bot.start(requested_by=CAROL)
    await bot.decide("approve", first, user=ALICE)
    await bot.slack.wait_for(lambda: "/tmp/b" in str(bot.slack.called("chat.postMessage")[-1]))
    second = bot.slack.called("chat.postMessage")[-1]["blocks"][-1]["elements"][0]["value"]
    await bot.decide("approve", second, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.finished()
    assert deleted == [["/tmp/a"], ["/tmp/b"]]
    assert await tool_audits(bot) == [
        (bot.record_id(first), "delete_files: deleted /tmp/a"),
        (bot.record_id(second), "delete_files: deleted /tmp/b"),
    ]


@pytest.mark.parametrize("after_telling", [False, True])
async def test_what_a_strands_call_did_is_told_once_when_its_worker_died_telling_it(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch, after_telling: bool
) -> None:
    """The worker died once the run's state was saved, as it told what the approved call
    did (before, or after, telling it): the retried job tells it, once, and the run's end."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted), reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=after_telling)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done (success): deleted 2")
    assert died == ["died"] and deleted == [["/tmp/a", "/tmp/b"]]
    assert bot.thread().count("delete_files: deleted 2") == 1
    assert await tool_audits(bot) == [(bot.record_id(value), "delete_files: deleted 2")]


async def test_what_a_strands_call_did_before_the_next_card_is_told_when_its_worker_died(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run asked again once the approved call ran; its worker died telling what the
    call did: the retried job tells it and posts the next card."""
    deleted: list[list[str]] = []
    spec = gated_spec(
        deleted,
        name="st-died-telling",
        model=DeletesTwiceWithOneCallId,
        says=lambda paths: f"deleted {paths[0]}",
    )
    bot: Harness = await make_bot(spec=spec, reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=False)
    first = await bot.start(requested_by=CAROL)
    await bot.decide("approve", first, user=ALICE)
    await bot.slack.wait_for(lambda: "/tmp/b" in str(bot.slack.called("chat.postMessage")[-1]))
    assert died == ["died"]
    second = bot.slack.called("chat.postMessage")[-1]["blocks"][-1]["elements"][0]["value"]
    await bot.decide("approve", second, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.finished()
    assert deleted == [["/tmp/a"], ["/tmp/b"]]
    assert bot.thread().count("delete_files: deleted /tmp/a") == 1
    assert await tool_audits(bot) == [
        (bot.record_id(first), "delete_files: deleted /tmp/a"),
        (bot.record_id(second), "delete_files: deleted /tmp/b"),
    ]
