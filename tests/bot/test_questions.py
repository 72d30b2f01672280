"""Questions with options (``interrupt_tool``, or a tool's own ``context.interrupt`` with
``options``): the answers are buttons or a select, and the agent receives the chosen answer
itself, read from the stored question."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness
from pydantic import BaseModel

from agent_runtime import Agent, Decision, ToolContext, interrupt_tool, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import ids


class Question(BaseModel):
    question: str
    choices: list[str]


def question_spec(choices: list[str], policy: Policy) -> AgentSpec:
    def build(store: SessionStore) -> Agent:
        ask = interrupt_tool("ask_region", Question, "Ask which region to clean")
        model = OneToolModel("ask_region", {"question": "Which region?", "choices": choices})
        return Agent(model=model, tools=[ask], session_store=store, name="regions")

    return AgentSpec(name="regions", build=build, policy=policy)


def _model_was_told(bot: Harness) -> list[str]:
    agent = bot.services.registry.agent("regions")
    requests = agent.model.requests  # type: ignore[attr-defined]
    return [m.content for r in requests for m in r.messages if m.role == "tool"]


async def test_up_to_five_answers_are_buttons_and_the_question_is_the_cards_text(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(["eu", "us", "ap"], policy))
    value = await bot.start()
    blocks = bot.posted()["blocks"]
    assert blocks[0]["text"]["text"] == "Question: ask_region"
    assert "Which region?" in str(blocks[1])
    choices, actions = blocks[-2], blocks[-1]
    assert [e["text"]["text"] for e in choices["elements"]] == ["eu", "us", "ap"]
    assert choices["block_id"] == f"{ids.CHOICES_BLOCK} {value}"
    # The policy offers no reply, so the only other button is Decline.
    assert [e["text"]["text"] for e in actions["elements"] if e["type"] == "button"] == ["Decline"]

    await bot.click(f"{ids.CHOOSE}.2", "2", user=ALICE, block_id=choices["block_id"])
    assert "done: ap" in await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert _model_was_told(bot) == ["ap"]
    # The card is redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_calls("chat.update")
    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"] == "Answered: ask_region"
    assert "*Answer:* ap" in str(update["blocks"])


async def test_more_than_five_answers_are_one_select(make_bot: Any) -> None:
    regions = [f"region-{n}" for n in range(8)]
    policy = Policy(channel=CHANNEL, users=(ALICE,))
    bot: Harness = await make_bot(spec=question_spec(regions, policy))
    await bot.start()
    choices = bot.posted()["blocks"][-2]
    [select] = choices["elements"]
    assert select["type"] == "static_select" and select["action_id"] == ids.CHOOSE
    assert [o["text"]["text"] for o in select["options"]] == regions

    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=choices["block_id"], selected="6")
    assert "done: region-6" in await bot.finished()
    assert _model_was_told(bot) == ["region-6"]


async def test_a_forged_answer_index_or_a_forbidden_reply_decides_nothing(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(["eu", "us"], policy))
    value = await bot.start()
    block_id = bot.posted()["blocks"][-2]["block_id"]

    await bot.click(f"{ids.CHOOSE}.7", "7", user=ALICE, block_id=block_id)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not offered" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    # A select's option that str.isdigit takes for a number and int() does not: ignored.
    with caplog.at_level(logging.ERROR):
        caplog.clear()  # what the run logged before, at whatever level earlier tests left
        answer = await bot.click(ids.CHOOSE, "", user=ALICE, block_id=block_id, selected="\u00b2")
    assert answer.status == 200 and caplog.records == []

    status, body = await bot.submit(ids.REPLY_VIEW, value, user=ALICE, text="somewhere else")
    assert status == 200 and "not offered" in body

    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert bot.slack.called("chat.update") == []


async def test_a_reply_in_the_approvers_own_words_is_the_answer_when_allowed(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,))
    bot: Harness = await make_bot(spec=question_spec(["eu", "us"], policy))
    value = await bot.start()
    actions = bot.posted()["blocks"][-1]
    assert [e["text"]["text"] for e in actions["elements"] if e["type"] == "button"] == [
        "Reply in your own words",
        "Decline",
    ]
    status, body = await bot.submit(ids.REPLY_VIEW, value, user=ALICE, text="both, eu first")
    assert status == 200 and "errors" not in body
    await bot.finished()
    assert _model_was_told(bot) == ["both, eu first"]


async def test_the_list_of_what_waits_says_a_question_asks_not_that_a_tool_runs(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(["eu", "us"], policy))
    await bot.start()
    listed = await bot.command("", user=ALICE)
    summaries = [b["text"]["text"] for b in listed["blocks"] if b["type"] == "section"]
    assert summaries == ["*regions* asks: Which region?"], summaries


async def test_a_tools_own_question_with_options_offers_them_and_the_tool_gets_the_pick(
    make_bot: Any,
) -> None:
    """``context.interrupt(..., options=[...])`` asks as ``interrupt_tool`` does."""
    got: list[Any] = []

    @tool
    def clean_region(context: ToolContext) -> str:
        """Clean the region a person picks."""
        picked = context.interrupt("region", reason="Which region?", options=["eu", "us"])
        got.append(picked)
        return f"cleaned {picked}"

    def build(store: SessionStore) -> Agent:
        model = OneToolModel("clean_region", {})
        return Agent(model=model, tools=[clean_region], session_store=store, name="regions")

    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=AgentSpec(name="regions", build=build, policy=policy))
    value = await bot.start()
    choices, actions = bot.posted()["blocks"][-2:]
    assert [e["text"]["text"] for e in choices["elements"]] == ["eu", "us"]
    assert [e["text"]["text"] for e in actions["elements"] if e["type"] == "button"] == ["Decline"]
    assert choices["block_id"] == f"{ids.CHOICES_BLOCK} {value}"
    await bot.click(f"{ids.CHOOSE}.1", "1", user=ALICE, block_id=choices["block_id"])
    assert "done: cleaned us" in await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert got == ["us"]
    # The card is redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_calls("chat.update")
    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"].startswith("Answered:")
    assert "*Answer:* us" in str(update["blocks"])


async def test_a_tools_own_question_declined_gives_the_tool_a_rejection_with_the_reason(
    make_bot: Any,
) -> None:
    got: list[Any] = []

    @tool
    def clean_region(context: ToolContext) -> str:
        """Clean the region a person picks, if they pick one."""
        picked = context.interrupt("region", reason="Which region?", options=["eu", "us"])
        got.append(picked)
        return f"not cleaned: {picked.message}" if isinstance(picked, Decision) else "cleaned"

    def build(store: SessionStore) -> Agent:
        model = OneToolModel("clean_region", {})
        return Agent(model=model, tools=[clean_region], session_store=store, name="regions")

    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=AgentSpec(name="regions", build=build, policy=policy))
    value = await bot.start()
    await bot.click(ids.DENY, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="none today")
    assert status == 200 and "errors" not in body
    assert "done: not cleaned: none today" in await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert [(d.type, d.message) for d in got] == [("reject", "none today")]
    # The card is redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_calls("chat.update")
    headline = bot.slack.called("chat.update")[-1]["blocks"][0]["text"]["text"]
    assert headline.startswith("Declined:")


async def test_a_question_nobody_answered_in_time_says_it_was_not_answered(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(hours=1))
    bot: Harness = await make_bot(spec=question_spec(["eu", "us"], policy))
    await bot.start()
    choices = bot.posted()["blocks"][-2]
    bot.clock.advance(timedelta(hours=2))

    await bot.click(f"{ids.CHOOSE}.0", "0", user=ALICE, block_id=choices["block_id"])
    await bot.slack.wait_calls("chat.postEphemeral")
    [refused] = bot.slack.called("chat.postEphemeral")
    assert refused["text"] == "This question's time is up; nothing was answered."

    await Scheduler(bot.services).tick()
    await bot.finished()
    card = bot.slack.called("chat.update")[-1]
    assert card["blocks"][0]["text"]["text"] == "Expired, not answered: ask_region"
    assert "approved" not in str(card["blocks"]) + card["text"]
    [told] = [t for t in bot.thread() if t.startswith(f"<@{CAROL}> :hourglass:")]
    assert told.startswith(f"<@{CAROL}> :hourglass: Expired, not answered "), told
