"""A tool's own interrupt, whose answer its code takes, offers no "Approve and trust": no
trust covers it (the runtime remembers only the approvals its policy asks, and a grant
approves only those), so its card would say later calls are trusted while each is asked
again. A forged trust click on it is a plain approval, and says nothing of trust."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness, card_now

from agent_runtime import Agent, Decision, SessionStore, ToolContext, tool
from agent_runtime.interrupts import Remember
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids


def _asks_itself(policy: Policy, ran: list[list[str]]) -> AgentSpec:
    """``delete_files``, called twice in one run, asks a person itself each time."""

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete files once a person agrees."""
        answer = context.interrupt("confirm", reason={"paths": paths})
        assert isinstance(answer, Decision)
        if answer.type != "approve":
            return "not deleted"
        ran.append(paths)
        return f"deleted {len(paths)}"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel(
                "delete_files", {"paths": ["/tmp/a"]}, then=({"paths": ["/tmp/b"]},)
            ),
            tools=[delete_files],
            session_store=store,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=policy)


def _cards(bot: Harness) -> list[dict[str, Any]]:
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


@pytest.mark.parametrize(
    "trust", [Remember(scope="run"), Remember(scope="minutes", minutes=60)], ids=["run", "minutes"]
)
async def test_a_tools_own_interrupt_offers_no_trust_and_a_forged_one_approves_plainly(
    make_bot: Any, trust: Remember
) -> None:
    ran: list[list[str]] = []
    policy = Policy(channel=CHANNEL, users=(ALICE,), trust=trust)
    bot: Harness = await make_bot(spec=_asks_itself(policy, ran))
    value = await bot.start(requested_by=CAROL)
    offered = [e["action_id"] for e in bot.posted(0)["blocks"][-1]["elements"]]
    assert ids.APPROVE in offered and ids.TRUST not in offered

    await bot.click(ids.TRUST, value, user=ALICE)  # forged: the card never showed it
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="the run's next call asked")
    await bot.settled()
    assert ran == [["/tmp/a"]]  # the next call waits for its own card, as its code asks
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved"
    assert record.decision is not None and record.decision.get("remember") is None
    assert await bot.services.storage.trust.active(bot.clock.now()) == []
    decided = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()][-1]
    assert "Approved by <@U0ALICE>" in str(decided["blocks"])
    assert "Trusted" not in str(decided["blocks"]) and "Trusted" not in str(card_now(bot))
