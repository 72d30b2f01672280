"""The Edit modal is a form generated from the tool's JSON schema, and its errors are
sentences under the field that is wrong (never a raw pattern)."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Annotated, Any, Literal

from fakes import OneToolModel
from harness import ALICE, CHANNEL, Harness
from pydantic import Field, HttpUrl

from agent_runtime import Agent, Workflow, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from sandbox.blocks import checked_view

Email = Annotated[
    str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", json_schema_extra={"format": "email"})
]
Url = Annotated[str, Field(pattern=r"^https?://\S+$", json_schema_extra={"format": "uri"})]
ARGS = {
    "title": "Quarterly cleanup",
    "count": 3,
    "ratio": 0.5,
    "urgent": False,
    "region": "eu",
    "day": "2026-12-01",
    "at": "2026-12-01T09:30:00+00:00",
    "owner": "ops@example.com",
    "tags": ["logs", "tmp"],
    "limits": {"files": 10},
}


def schedule_spec(received: list[dict[str, Any]]) -> AgentSpec:
    @tool
    def schedule(
        title: str,
        count: int,
        ratio: float,
        urgent: bool,
        region: Literal["eu", "us", "ap"],
        day: date,
        at: datetime,
        owner: Email,
        tags: list[str],
        limits: dict[str, int],
    ) -> str:
        """Schedule a cleanup."""
        received.append(
            {
                "title": title,
                "count": count,
                "urgent": urgent,
                "region": region,
                "day": day.isoformat(),
                "owner": owner,
                "tags": tags,
                "limits": limits,
            }
        )
        return "scheduled"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("schedule", ARGS),
            tools=[schedule],
            interrupt_on={"schedule": True},
            session_store=store,
            name="scheduler",
        )

    return AgentSpec(name="scheduler", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def _form(bot: Harness, value: str) -> dict[str, dict[str, Any]]:
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    view = bot.slack.called("views.open")[-1]["view"]
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


async def test_each_type_gets_its_own_input_filled_with_the_arguments(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=schedule_spec([]))
    form = await _form(bot, await bot.start())
    kinds = {name.removeprefix("arg."): block["element"]["type"] for name, block in form.items()}
    assert kinds == {
        "title": "plain_text_input",
        "count": "number_input",
        "ratio": "number_input",
        "urgent": "checkboxes",
        "region": "static_select",
        "day": "datepicker",
        "at": "datetimepicker",
        "owner": "email_text_input",
        "tags": "plain_text_input",
        "limits": "plain_text_input",
    }
    assert form["arg.count"]["element"]["is_decimal_allowed"] is False
    assert form["arg.ratio"]["element"]["is_decimal_allowed"] is True
    assert form["arg.region"]["element"]["initial_option"]["value"] == "eu"
    assert form["arg.day"]["element"]["initial_date"] == "2026-12-01"
    assert form["arg.tags"]["element"]["initial_value"] == "logs\ntmp"
    assert json.loads(form["arg.limits"]["element"]["initial_value"]) == {"files": 10}
    assert form["arg.limits"]["label"]["text"] == "limits (JSON)"
    assert "initial_options" not in form["arg.urgent"]["element"]


async def test_a_submitted_form_runs_the_tool_with_typed_arguments(make_bot: Any) -> None:
    received: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=schedule_spec(received))
    value = await bot.start()
    form = await _form(bot, value)
    urgent = form["arg.urgent"]["element"]["options"][0]
    status, body = await bot.submit_form(
        value,
        user=ALICE,
        values={
            "arg.title": {"type": "plain_text_input", "value": "Year-end cleanup"},
            "arg.count": {"type": "number_input", "value": "7"},
            "arg.ratio": {"type": "number_input", "value": "0.25"},
            "arg.urgent": {"type": "checkboxes", "selected_options": [urgent]},
            "arg.region": {"type": "static_select", "selected_option": {"value": "ap"}},
            "arg.day": {"type": "datepicker", "selected_date": "2026-12-24"},
            "arg.at": {"type": "datetimepicker", "selected_date_time": 1798102800},
            "arg.owner": {"type": "email_text_input", "value": "lead@example.com"},
            "arg.tags": {"type": "plain_text_input", "value": "logs\n\n cache \n"},
            "arg.limits": {"type": "plain_text_input", "value": '{"files": 99}'},
        },
    )
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == [
        {
            "title": "Year-end cleanup",
            "count": 7,
            "urgent": True,
            "region": "ap",
            "day": "2026-12-24",
            "owner": "lead@example.com",
            "tags": ["logs", "cache"],
            "limits": {"files": 99},
        }
    ]


async def test_wrong_values_get_sentences_under_their_fields_and_nothing_is_decided(
    make_bot: Any,
) -> None:
    received: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=schedule_spec(received))
    value = await bot.start()
    form = await _form(bot, value)
    values = {
        block_id: {"type": block["element"]["type"], "value": block["element"].get("initial_value")}
        for block_id, block in form.items()
    }
    values["arg.region"] = {"type": "static_select", "selected_option": {"value": "eu"}}
    values["arg.day"] = {"type": "datepicker", "selected_date": "2026-12-01"}
    values["arg.at"] = {"type": "datetimepicker", "selected_date_time": 1798102800}
    values["arg.count"] = {"type": "number_input", "value": "lots"}
    values["arg.owner"] = {"type": "email_text_input", "value": "not-an-address"}
    status, body = await bot.submit_form(value, user=ALICE, values=values)
    assert status == 200
    errors = json.loads(body)["errors"]
    assert errors == {"arg.count": "This must be a whole number, like 42."}

    values["arg.count"] = {"type": "number_input", "value": "3"}
    for ratio, limits in (("nan", '{"a": 1}'), ("1e999", '{"a": 1}'), ("0.5", '{"a": NaN}')):
        values["arg.ratio"] = {"type": "number_input", "value": ratio}
        values["arg.limits"] = {"type": "plain_text_input", "value": limits}
        status, body = await bot.submit_form(value, user=ALICE, values=values)
        errors = json.loads(body)["errors"]
        assert set(errors) >= {"arg.ratio" if ratio != "0.5" else "arg.limits"}, errors
    values["arg.ratio"] = {"type": "number_input", "value": "0.5"}
    values["arg.limits"] = {"type": "plain_text_input", "value": '{"a": 1}'}
    status, body = await bot.submit_form(value, user=ALICE, values=values)
    errors = json.loads(body)["errors"]
    assert errors == {"arg.owner": "This must be an email address like name@example.com."}
    assert "^" not in body and "pattern" not in body

    values["arg.title"] = {"type": "plain_text_input", "value": None}
    values["arg.owner"] = {"type": "email_text_input", "value": "ops@example.com"}
    status, body = await bot.submit_form(value, user=ALICE, values=values)
    assert json.loads(body)["errors"] == {"arg.title": "This is required."}

    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert received == []


async def test_a_web_address_gets_a_url_input_and_a_sentence_when_it_is_not_one(
    make_bot: Any,
) -> None:
    fetched: list[str] = []

    @tool
    def fetch(link: Url, mirror: HttpUrl) -> str:
        """Fetch a page."""
        fetched.extend([link, str(mirror)])
        return "fetched"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel(
                "fetch", {"link": "https://example.com/a", "mirror": "https://mirror.example/a"}
            ),
            tools=[fetch],
            interrupt_on={"fetch": True},
            session_store=store,
            name="fetcher",
        )

    spec = AgentSpec(name="fetcher", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start()
    form = await _form(bot, value)
    assert [form[f"arg.{name}"]["element"]["type"] for name in ("link", "mirror")] == [
        "url_text_input"
    ] * 2
    assert form["arg.link"]["element"]["initial_value"] == "https://example.com/a"
    wrong = {
        "arg.link": {"type": "url_text_input", "value": "example dot com"},
        "arg.mirror": {"type": "url_text_input", "value": "ftp://mirror.example/a"},
    }
    status, body = await bot.submit_form(value, user=ALICE, values=wrong)
    assert status == 200
    sentence = "This must be a web address like https://example.com."
    assert json.loads(body)["errors"] == {"arg.link": sentence, "arg.mirror": sentence}
    right = {
        "arg.link": {"type": "url_text_input", "value": "https://example.com/b"},
        "arg.mirror": {"type": "url_text_input", "value": "https://mirror.example/b"},
    }
    status, _ = await bot.submit_form(value, user=ALICE, values=right)
    assert status == 200
    await bot.finished()
    assert fetched == ["https://example.com/b", "https://mirror.example/b"]


QUERY = "SELECT id FROM orders WHERE created < now() - interval '30 days' " + "x" * 100
Where = Annotated[str, Field(json_schema_extra={"enum": ["all", QUERY]})]
"""An argument whose allowed values include one too long for a select's option."""


async def test_a_choice_slack_cannot_list_is_typed_instead(make_bot: Any) -> None:
    """An allowed value longer than a select's option value (150 characters) would make
    Slack refuse the whole form: that argument is a text input, and only one of the
    allowed values typed in it is taken."""
    received: list[str] = []

    @tool
    def archive(where: Where) -> str:
        """Archive orders."""
        received.append(where)
        return "archived"

    def build(store: SessionStore) -> Agent:
        model = OneToolModel("archive", {"where": QUERY})
        return Agent(
            model=model, tools=[archive], interrupt_on={"archive": True}, session_store=store
        )

    spec = AgentSpec(name="archiver", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start()
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    view = bot.slack.called("views.open")[-1]["view"]
    checked_view(view)  # what Slack checks: no invalid_arguments
    [field] = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["element"]["type"] == "plain_text_input"
    assert field["element"]["initial_value"] == QUERY

    typed = {"arg.where": {"type": "plain_text_input", "value": "DELETE FROM orders"}}
    status, body = await bot.submit_form(value, user=ALICE, values=typed)
    assert status == 200
    [error] = json.loads(body)["errors"].values()
    assert error.startswith("This is not one of the 2 allowed values, typed exactly")
    typed = {"arg.where": {"type": "plain_text_input", "value": "all"}}
    status, body = await bot.submit_form(value, user=ALICE, values=typed)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == ["all"]


async def test_an_edit_a_workflows_agent_node_cannot_take_is_refused_in_the_form(
    make_bot: Any,
) -> None:
    """A workflow's agent node's tool gets its form, and arguments it cannot take are
    refused there, as for an agent: not recorded, to fail the run when it resumes."""
    received: list[int] = []

    @tool
    def resize(count: int) -> str:
        """Resize the pool."""
        received.append(count)
        return f"resized to {count}"

    def build(store: SessionStore) -> Workflow:
        model = OneToolModel("resize", {"count": 3})
        agent = Agent(
            model=model, tools=[resize], interrupt_on={"resize": True}, session_store=store
        )
        return Workflow(nodes={"scale": agent}, session_store=store)

    spec = AgentSpec(name="wf", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start()
    status, body = await bot.submit_form(
        value, user=ALICE, values={"arg.count": {"type": "plain_text_input", "value": "three"}}
    )
    assert status == 200
    assert json.loads(body)["errors"] == {"arg.count": "This must be a whole number, like 42."}
    assert received == []
