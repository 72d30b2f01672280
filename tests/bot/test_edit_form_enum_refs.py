"""A tool argument typed as an ``Enum`` (a ``$ref`` into the schema's ``$defs``) or a
``Literal`` gets a select in the Edit form, of strings or of integers alike, and the tool
receives exactly the allowed value picked, as the schema has it."""

from __future__ import annotations

import json
from enum import Enum, IntEnum
from typing import Any, Literal

from blockkit import check_modal
from fakes import OneToolModel
from harness import ALICE, CHANNEL, Harness

from agent_runtime import Agent, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from bot.ui.arg_form import fields_of
from sandbox.blocks import checked_view


class Region(Enum):
    EU = "eu-west"
    US = "us-east"
    AP = "ap-south"


class Replicas(IntEnum):
    ONE = 1
    THREE = 3
    FIVE = 5


ARGS = {"region": "eu-west", "tier": "standard", "replicas": 3, "shards": 2, "backup": None}


def deploy_spec(received: list[dict[str, Any]]) -> AgentSpec:
    @tool
    def deploy(
        region: Region,
        tier: Literal["standard", "premium"],
        replicas: Replicas,
        shards: Literal[2, 4, 8],
        backup: Region | None = None,
    ) -> str:
        """Deploy the service."""
        args = {"region": region, "tier": tier, "replicas": replicas, "shards": shards}
        received.append(args | {"backup": backup})
        return "deployed"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("deploy", ARGS),
            tools=[deploy],
            interrupt_on={"deploy": True},
            session_store=store,
            name="deployer",
        )

    return AgentSpec(name="deployer", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def _form(bot: Harness, value: str) -> dict[str, dict[str, Any]]:
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    view = checked_view(bot.slack.called("views.open")[-1]["view"])  # as Slack checks it
    check_modal(view)
    return {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}


def _values(element: dict[str, Any]) -> list[str]:
    return [o["value"] for o in element["options"]]


def _picked(value: str) -> dict[str, Any]:
    return {"type": "static_select", "selected_option": {"value": value}}


async def test_enum_and_literal_arguments_are_selects_shown_at_the_calls_values(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(spec=deploy_spec([]))
    form = await _form(bot, await bot.start())
    assert {name: e["type"] for name, e in form.items()} == {
        "arg.region": "static_select",
        "arg.tier": "static_select",
        "arg.replicas": "static_select",
        "arg.shards": "static_select",
        "arg.backup": "static_select",
    }
    assert _values(form["arg.region"]) == ["eu-west", "us-east", "ap-south"]
    assert _values(form["arg.backup"]) == ["eu-west", "us-east", "ap-south"]
    assert _values(form["arg.replicas"]) == ["1", "3", "5"]
    assert _values(form["arg.shards"]) == ["2", "4", "8"]
    assert form["arg.region"]["initial_option"]["value"] == "eu-west"
    assert form["arg.tier"]["initial_option"]["value"] == "standard"
    assert form["arg.replicas"]["initial_option"]["value"] == "3"
    assert form["arg.shards"]["initial_option"]["value"] == "2"
    assert "initial_option" not in form["arg.backup"]


async def test_picked_values_reach_the_tool_as_the_enums_own_values(make_bot: Any) -> None:
    received: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=deploy_spec(received))
    value = await bot.start()
    await _form(bot, value)
    status, body = await bot.submit_form(
        value,
        user=ALICE,
        values={
            "arg.region": _picked("ap-south"),
            "arg.tier": _picked("premium"),
            "arg.replicas": _picked("5"),
            "arg.shards": _picked("8"),
            "arg.backup": _picked("us-east"),
        },
    )
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == [
        {
            "region": Region.AP,
            "tier": "premium",
            "replicas": Replicas.FIVE,
            "shards": 8,
            "backup": Region.US,
        }
    ]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "edited" and record.decision is not None
    assert record.decision["args"] == {
        "region": "ap-south",
        "tier": "premium",
        "replicas": 5,
        "shards": 8,
        "backup": "us-east",
    }


async def test_a_value_the_enum_lacks_is_refused_under_its_field(make_bot: Any) -> None:
    received: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=deploy_spec(received))
    value = await bot.start()
    status, body = await bot.submit_form(
        value,
        user=ALICE,
        values={
            "arg.region": _picked("EU"),
            "arg.tier": _picked("standard"),
            "arg.replicas": _picked("2"),
            "arg.shards": _picked("2"),
            "arg.backup": {"type": "static_select", "selected_option": None},
        },
    )
    assert status == 200
    refused = "This is not one of the allowed values: pick one from the list."
    assert json.loads(body)["errors"] == {"arg.region": refused, "arg.replicas": refused}
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert received == []


def test_a_broken_remote_or_circular_reference_is_edited_as_json() -> None:
    schema = {
        "type": "object",
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
        "definitions": {"Size": {"enum": [1, 2], "type": "integer"}},
        "properties": {
            "loop": {"$ref": "#/$defs/A"},
            "gone": {"$ref": "#/$defs/Missing"},
            "far": {"$ref": "https://example.com/schema.json#/$defs/Region"},
            "size": {"allOf": [{"$ref": "#/definitions/Size"}], "default": 2},
        },
    }
    fields = {f.name: f for f in fields_of(schema) or []}
    assert [fields[n].kind for n in ("loop", "gone", "far")] == ["json"] * 3
    assert fields["size"].kind == "choice" and fields["size"].options == (1, 2)
    assert fields["size"].default == 2
