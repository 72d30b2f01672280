"""Trust on the cards of adapted agents (Strands, LangChain, Genkit; real packages,
scripted models): each framework asks again at every call of a gated tool, so trust for
the rest of the run, which it cannot keep, stops the agent's build; a grant for minutes,
which Signoff keeps itself, covers the run's next call."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from harness import ALICE, CAROL, CHANNEL, Harness
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from twice_agents import FRAMEWORKS, PATHS, twice_spec

from agent_runtime.errors import UsageError
from agent_runtime.interrupts import Remember
from agent_runtime.session import InMemorySessionStore
from bot.agents.policy import Policy
from bot.agents.registry import Registry
from bot.ui import ids

KINDS = {"strands": "StrandsAgent", "langchain": "LangGraphAgent", "genkit": "GenkitAgent"}
NAMES = {"strands": "st-twice", "langchain": "lc-twice", "genkit": "gk-twice"}


def _cards(bot: Harness) -> list[dict[str, Any]]:
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("where", ["policy", "tools['delete_files']"])
async def test_trust_for_the_run_stops_the_adapted_agents_build(
    saver: AsyncSqliteSaver, framework: str, where: str
) -> None:
    """Its card would offer "Approve and trust for this run", say "Trusted for the rest of
    this run" after the click, and the run's next call would get a card anyway."""
    run_trust = Policy(channel=CHANNEL, users=(ALICE,), trust=Remember(scope="run"))
    plain = Policy(channel=CHANNEL, users=(ALICE,))
    spec = twice_spec(framework, [], run_trust, saver)
    if where != "policy":
        spec = replace(spec, policy=plain, tools={"delete_files": run_trust})
    registry = Registry([spec], sessions=InMemorySessionStore())
    with pytest.raises(UsageError) as refused:
        registry.agent(spec.name)
    assert str(refused.value) == (
        f"agent {NAMES[framework]!r}: trust=Remember(scope='run') ({where}) cannot hold for a "
        f"{KINDS[framework]}, which asks again at each call of the tool; use "
        "Remember(scope='minutes', minutes=...), which covers the tool's later calls in that "
        "channel (of this run and later ones) until then, or leave trust unset"
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_trust_for_minutes_approves_the_adapted_runs_next_call_without_a_click(
    make_bot: Any, saver: AsyncSqliteSaver, framework: str
) -> None:
    deleted: list[list[str]] = []
    policy = Policy(channel=CHANNEL, users=(ALICE,), trust=Remember(scope="minutes", minutes=60))
    bot: Harness = await make_bot(spec=twice_spec(framework, deleted, policy, saver))
    await bot.start(requested_by=CAROL)
    [card] = _cards(bot)
    [trust] = [e for e in card["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST]
    assert trust["text"]["text"] == "Approve and trust this tool for 60 min"
    await bot.click(ids.TRUST, trust["value"], user=ALICE)
    assert (await bot.finished()).startswith("Finished:")
    assert deleted == list(PATHS)
    [_, again] = _cards(bot)
    [value] = {e["value"] for e in again["blocks"][-1]["elements"] if e.get("value")}
    second = await bot.services.storage.queries.get(bot.record_id(value))
    assert second is not None
    assert (second.state, second.decided_by, bool(second.trust_grant)) == ("approved", ALICE, True)
