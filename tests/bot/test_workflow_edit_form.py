"""A workflow node guarded with an input model gets the Edit form of that model, as a tool
does: a select for a ``Literal``, a number input for an ``int``; the form's edit is the
node's input, and one the model refuses is refused with a sentence under its field,
nothing decided. A node without one is edited as JSON."""

from __future__ import annotations

import json
from typing import Any, Literal

from harness import ALICE, CAROL, CHANNEL, Harness
from pydantic import BaseModel, Field
from test_adapter_edit_forms import _form, scale_in_form

from agent_runtime import NodeContext, SessionStore, Workflow
from bot.agents.policy import AgentSpec, Policy


class Scale(BaseModel):
    service: Literal["api", "web"]
    replicas: int = Field(ge=1)


def _spec(ran: list[Any], *, modelled: bool) -> AgentSpec:
    async def plan(ctx: NodeContext) -> dict[str, Any]:
        return {"service": "api", "replicas": 2}

    async def scale(ctx: NodeContext) -> str:
        ran.append(ctx.input)
        return "scaled"

    def build(store: SessionStore) -> Workflow:
        return Workflow(
            nodes={"plan": plan, "scale": scale},
            interrupt_before={"scale": True},
            input_models={"scale": Scale} if modelled else None,
            session_store=store,
            name="scaling",
        )

    return AgentSpec(name="scaling", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def test_a_node_with_an_input_model_is_edited_in_its_form_and_runs_with_the_edit(
    make_bot: Any,
) -> None:
    ran: list[Any] = []
    bot: Harness = await make_bot(spec=_spec(ran, modelled=True))
    value = await bot.start(requested_by=CAROL)
    form = await _form(bot, value)
    assert sorted(form) == ["arg.replicas", "arg.service"]
    assert [o["value"] for o in form["arg.service"]["options"]] == ["api", "web"]
    assert form["arg.replicas"]["type"] == "number_input"
    assert form["arg.replicas"]["initial_value"] == "2"
    status, body = await scale_in_form(bot, value, "web", 0)
    assert status == 200
    assert json.loads(body)["errors"] == {
        "arg.replicas": "This should be greater than or equal to 1."
    }
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    status, body = await scale_in_form(bot, value, "web", 5)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert ran == [{"service": "web", "replicas": 5}]


async def test_a_node_without_an_input_model_is_edited_as_json(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=_spec([], modelled=False))
    value = await bot.start(requested_by=CAROL)
    form = await _form(bot, value)
    [element] = form.values()
    assert element["type"] == "plain_text_input" and element.get("multiline") is True
    assert json.loads(element["initial_value"]) == {"service": "api", "replicas": 2}
