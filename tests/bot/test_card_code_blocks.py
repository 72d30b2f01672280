"""A card's long code blocks (what the call acts on, what changed since, the arguments
as asked of an edited call) are cut inside their fences, over real HTTP: a section cut
past Slack's 3,000 characters must not take a block's closing fence, which would show
the rest as mrkdwn (an agent's ``*approve now*`` in bold) and the fence as backticks."""

from __future__ import annotations

from typing import Any

from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness, card_now
from slack_cards import mrkdwn_texts

from agent_runtime import Agent, SessionStore, tool
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids

_FENCE = "```"
BAIT = "*approve now*"


def _open_blocks(message: dict[str, Any]) -> list[str]:
    """The texts of ``message`` with a code block left open (its closing fence cut)."""
    return [t for t in mrkdwn_texts(message["blocks"]) if t.count(_FENCE) % 2]


def _volumes(prefix: str) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}-{n:03}", "note": BAIT, "days": 400} for n in range(100)]


def _cleanup(volumes: list[dict[str, Any]]) -> AgentSpec:
    """Deletes the volumes its precondition lists: a hundred, more than a section holds."""

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete the volumes older than this."""
        return f"deleted {len(volumes)} volume(s)"

    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_volumes", {"older_than_days": 90}),
            tools=[delete_volumes],
            interrupt_on={"delete_volumes": {"precondition": lambda _call: list(volumes)}},
            session_store=sessions,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def test_what_a_call_acts_on_and_what_changed_stay_in_closed_code_blocks(
    make_bot: Any,
) -> None:
    volumes = _volumes("vol-a")
    bot: Harness = await make_bot(spec=_cleanup(volumes))
    value = await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert "*It will act on*" in str(card["blocks"])
    assert _open_blocks(card) == []

    volumes[:] = _volumes("vol-b")  # the world moved on: asked again, shown what changed
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(
        lambda: len([p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]) == 2,
        what="the card asking again",
    )
    again = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")][1]
    assert "*Changed since it was approved*" in str(again["blocks"])
    assert _open_blocks(again) == []


async def test_an_edited_calls_long_arguments_as_asked_stay_in_a_closed_code_block(
    make_bot: Any,
) -> None:
    paths = [f"/srv/data/{BAIT}/{n:04}.log" for n in range(150)]

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        return f"deleted {len(paths)} file(s)"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": paths}),
            tools=[delete_files],
            interrupt_on={"delete_files": True},
            session_store=store,
            name="cleanup",
        )

    policy = Policy(channel=CHANNEL, users=(ALICE,))
    bot: Harness = await make_bot(spec=AgentSpec(name="cleanup", build=build, policy=policy))
    value = await bot.start(requested_by=CAROL)
    await bot.decide("edit", value, user=ALICE)

    def edited() -> bool:
        return "*Arguments as asked*" in str(card_now(bot)["blocks"])

    await bot.slack.wait_for(edited, what="the card approved with edits")
    assert _open_blocks(card_now(bot)) == []
