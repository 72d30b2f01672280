"""What a card cuts to fit Slack beside a call's arguments (what the call will act on,
why it is asked) is offered whole in Full details, over real HTTP: on the card while it
waits, and while its decision waits out the undo window."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness, card_now

from agent_runtime import Agent, SessionStore, ToolContext, tool
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids

VOLUMES = [{"id": f"vol-{n:03}", "gb": 10, "days": 400} for n in range(100)]
WHY = " ".join(f"reason-{n:04}" for n in range(600))  # 7,200 characters


def _buttons(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        e["action_id"]: e
        for b in message["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if "action_id" in e
    }


async def _full_details(bot: Harness, message: dict[str, Any]) -> str:
    """Click the card's Full details; the modal it opens, as text."""
    button = _buttons(message)[ids.FULL_ARGS]
    assert button["text"]["text"] == "Full details"
    opened = len(bot.slack.called("views.open"))
    await bot.click(ids.FULL_ARGS, button["value"], user=ALICE)
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("views.open")) > opened, what="the Full details modal"
    )
    return str(bot.slack.called("views.open")[-1]["view"])


def _volumes_spec(policy: Policy) -> AgentSpec:
    """Deletes the hundred volumes its precondition lists, more than a section holds."""

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete the volumes older than this."""
        return f"deleted {len(VOLUMES)} volume(s)"

    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_volumes", {"older_than_days": 90}),
            tools=[delete_volumes],
            interrupt_on={"delete_volumes": {"precondition": lambda _call: VOLUMES}},
            session_store=sessions,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=policy)


async def test_what_a_call_acts_on_cut_on_its_card_is_in_full_details(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), undo_window=timedelta(seconds=60))
    bot: Harness = await make_bot(spec=_volumes_spec(policy))
    value = await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert "*It will act on*" in str(card["blocks"]) and "vol-099" not in str(card["blocks"])
    assert "vol-099" in await _full_details(bot, card)

    await bot.click(ids.APPROVE, value, user=ALICE)  # held in its undo window
    await bot.slack.wait_for(
        lambda: ids.UNDO in _buttons(card_now(bot)), what="the card's decision held"
    )
    assert "vol-099" in await _full_details(bot, card_now(bot))


def asking_why() -> AgentSpec:
    """An agent whose tool asks Alice to agree with ``WHY``, too long for its card."""

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete files once a person agrees with why."""
        context.interrupt("confirm", reason=WHY)
        return f"deleted {len(paths)}"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": ["/tmp/a"]}),
            tools=[delete_files],
            session_store=store,
            name="cleanup",
        )

    policy = Policy(channel=CHANNEL, users=(ALICE,))
    return AgentSpec(name="cleanup", build=build, policy=policy)


async def test_why_a_call_is_asked_cut_on_its_card_is_in_full_details(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=asking_why())
    await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert "*Why:* reason-0000" in str(card["blocks"]) and "reason-0599" not in str(card)
    assert "reason-0599" in await _full_details(bot, card)
