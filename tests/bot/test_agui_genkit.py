"""A Genkit generation served over AG-UI: when some of a turn's cards are decided in Slack,
the app answers the others alone, and the run goes on with both, once (the real Genkit
SDK, a model defined in the test)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agui_endpoint import Endpoint, run_client
from genkit import Genkit, Message, ModelRequest, ModelResponse, Part
from genkit_agents import define_delete_files
from harness import ALICE, CHANNEL

from bot.agents.policy import AgentSpec, Policy
from signoff.genkit import GenkitAgent


def two_deletions(deleted: list[list[str]]) -> AgentSpec:
    """A generation whose one turn asks to delete ``/tmp/a`` and ``/tmp/b`` (refs c1, c2)."""
    ai = Genkit()

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            calls = [
                Part.from_tool_request(name="delete_files", input={"paths": [path]}, ref=ref)
                for ref, path in (("c1", "/tmp/a"), ("c2", "/tmp/b"))
            ]
            return ModelResponse(message=Message(role="model", content=calls))
        said = "; ".join(str(r.output) for r in results)
        return ModelResponse(message=Message(role="model", content=[Part(text=f"done: {said}")]))

    ai.define_model(name="scripted", fn=scripted)
    define_delete_files(ai, deleted)
    return AgentSpec(
        name="gk-two",
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["delete_files"], session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


@pytest.mark.parametrize(
    ("in_slack", "in_app", "ran"),
    [
        ("approve", "reject", [["/tmp/a"]]),
        ("reject", "edit", [["/tmp/c"]]),  # the edit runs the app's arguments
    ],
)
async def test_a_card_decided_in_slack_goes_on_with_the_apps_answer_to_the_other(
    endpoint_for: Callable[..., Awaitable[Endpoint]], in_slack: str, in_app: str, ran: list[Any]
) -> None:
    """Card A is decided in Slack (Alice); the app's answer naming it too is refused, and
    its answer to B alone runs the generation on with both."""
    deleted: list[list[str]] = []
    endpoint = await endpoint_for(spec=two_deletions(deleted))
    bot, url = endpoint.bot, endpoint.url.replace("/cleanup", "/gk-two")
    [first] = await run_client(url, "thread-gk", [{"prompt": "clean up"}])
    interrupts = first["finished"]["outcome"]["interrupts"]
    await bot.slack.wait_calls("chat.postMessage", 2)
    value_a = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.decide(in_slack, value_a, user=ALICE)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == bot.message_ts(0) for u in bot.slack.called("chat.update")),
        what="card A decided in Slack",
    )
    card_a = await bot.services.storage.queries.get(bot.record_id(value_a))
    assert card_a is not None and card_a.state != "pending"
    [b] = [i for i in interrupts if i["id"] != card_a.runtime_interrupt.id]
    payload: dict[str, Any] = {"type": in_app}
    if in_app == "edit":
        payload["args"] = {"paths": ["/tmp/c"]}
    answer_b = {"interruptId": b["id"], "status": "resolved", "payload": payload}
    answer_a = {
        "interruptId": card_a.runtime_interrupt.id,
        "status": "resolved",
        "payload": {"type": "approve"},
    }
    [refused] = await run_client(url, "thread-gk", [{"resume": [answer_a, answer_b]}])
    assert refused["error"]["code"] == "decided_elsewhere", refused
    [seen] = await run_client(url, "thread-gk", [{"resume": [answer_b]}])
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}, seen
    assert deleted == ran
    card_b = await bot.services.storage.queries.get(
        bot.record_id(bot.posted(1)["blocks"][-1]["elements"][0]["value"])
    )
    assert card_b is not None and card_b.decided_by == "app" and card_b.state != "pending"
