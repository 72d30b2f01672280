"""An argument with more allowed values than a Slack select lists (100) can still be set
to any of them in the Edit form, and to nothing else."""

from __future__ import annotations

import json
from typing import Any, Literal

from blockkit import check_modal
from fakes import OneToolModel
from harness import ALICE, CHANNEL, Harness

from agent_runtime import Agent, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from sandbox.blocks import checked_view

ZONES = [f"europe-west{n // 10}-zone-{n:03d}" for n in range(250)]
MANY = [f"bucket-{n:05d}" for n in range(10_001)]
"""More values than a select holds even in groups (100 groups of 100)."""


def spec_of(values: list[str], current: str, received: list[str]) -> AgentSpec:
    """An agent whose one tool takes ``where``, one of ``values``, and asks for ``current``."""

    def move(where: str) -> str:
        """Move the workload."""
        received.append(where)
        return f"moved to {where}"

    move.__annotations__["where"] = Literal[tuple(values)]  # the tool's schema: an enum

    def build(store: SessionStore) -> Agent:
        model = OneToolModel("move", {"where": current})
        return Agent(
            model=model, tools=[tool(move)], interrupt_on={"move": True}, session_store=store
        )

    return AgentSpec(name="mover", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def _field(bot: Harness, value: str) -> dict[str, Any]:
    """The Edit form's input for ``where``, once the view passed Slack's checks."""
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    view = bot.slack.called("views.open")[-1]["view"]
    checked_view(view)  # what Slack checks: no invalid_arguments
    check_modal(view)
    [field] = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["block_id"] == "arg.where"
    return field


def _listed(element: dict[str, Any]) -> list[str]:
    groups = [element, *element.get("option_groups", [])]
    return [o["value"] for g in groups for o in g.get("options", [])]


async def test_any_of_250_values_can_be_picked_and_is_what_the_tool_runs_with(
    make_bot: Any,
) -> None:
    received: list[str] = []
    bot: Harness = await make_bot(spec=spec_of(ZONES, ZONES[0], received))
    value = await bot.start()
    element = (await _field(bot, value))["element"]
    assert element["type"] == "static_select" and "options" not in element
    assert [len(g["options"]) for g in element["option_groups"]] == [100, 100, 50]
    assert _listed(element) == ZONES
    assert element["initial_option"]["value"] == ZONES[0]

    picked = {"type": "static_select", "selected_option": {"value": ZONES[179]}}
    status, body = await bot.submit_form(value, user=ALICE, values={"arg.where": picked})
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == [ZONES[179]]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "edited"
    assert record.decision is not None and record.decision["args"] == {"where": ZONES[179]}


async def test_a_value_past_the_first_hundred_is_shown_picked_and_kept(make_bot: Any) -> None:
    received: list[str] = []
    bot: Harness = await make_bot(spec=spec_of(ZONES, ZONES[230], received))
    value = await bot.start()
    element = (await _field(bot, value))["element"]
    assert element["initial_option"] == element["option_groups"][2]["options"][30]
    assert element["initial_option"]["value"] == ZONES[230]
    shown = {"type": "static_select", "selected_option": element["initial_option"]}
    status, body = await bot.submit_form(value, user=ALICE, values={"arg.where": shown})
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == [ZONES[230]]


async def test_a_value_not_among_the_allowed_ones_is_refused_under_its_field(
    make_bot: Any,
) -> None:
    received: list[str] = []
    bot: Harness = await make_bot(spec=spec_of(ZONES, ZONES[0], received))
    value = await bot.start()
    for forged in ("europe-west9-zone-999", ZONES[179] + " ", ZONES[179].upper()):
        picked = {"type": "static_select", "selected_option": {"value": forged}}
        status, body = await bot.submit_form(value, user=ALICE, values={"arg.where": picked})
        assert status == 200
        assert json.loads(body)["errors"] == {
            "arg.where": "This is not one of the allowed values: pick one from the list."
        }
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert received == []


async def test_more_values_than_a_select_holds_are_typed_and_checked(make_bot: Any) -> None:
    """Past 100 groups of 100 the value is typed: exactly one of the allowed values (the
    spaces around it aside) is taken, anything else gets a sentence under the field."""
    received: list[str] = []
    bot: Harness = await make_bot(spec=spec_of(MANY, MANY[0], received))
    value = await bot.start()
    field = await _field(bot, value)
    assert field["element"]["type"] == "plain_text_input"
    assert field["element"]["initial_value"] == MANY[0]
    assert "10001 allowed values" in field["hint"]["text"]

    typed = {"type": "plain_text_input", "value": "bucket-99999"}
    status, body = await bot.submit_form(value, user=ALICE, values={"arg.where": typed})
    assert status == 200
    [error] = json.loads(body)["errors"].values()
    assert error.startswith("This is not one of the 10001 allowed values, typed exactly")
    assert received == []

    typed = {"type": "plain_text_input", "value": f" {MANY[9_999]}\n"}
    status, body = await bot.submit_form(value, user=ALICE, values={"arg.where": typed})
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == [MANY[9_999]]
