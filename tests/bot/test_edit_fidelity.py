"""The Edit form changes only what the approver changed: a field submitted as it was shown
keeps its argument exactly (an empty string, a null, a long number, a list's items, a
flag left to its default), a refusal shows under one of the form's own fields, and a
form Slack could not open is not offered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from blockkit import check_modal
from fakes import OneToolModel
from harness import ALICE, CHANNEL, MALLORY, Harness
from pydantic import SecretStr

from agent_runtime import Agent, tool
from agent_runtime.session import SessionStore
from agent_runtime.tools import Tool
from bot.agents.policy import AgentSpec, Policy
from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app
from bot.ui import ids
from bot.ui.arg_form import ACTION, fields_of, read_args
from sandbox.view_state import state_values


async def _form(bot: Harness, value: str, user: str = ALICE) -> dict[str, Any]:
    """The Edit form the click on ``value``'s card opens."""
    before = len(bot.slack.called("views.open"))
    await bot.click(ids.EDIT, value, user=user)
    await bot.slack.wait_for(lambda: len(bot.slack.called("views.open")) > before, what="form")
    return dict(bot.slack.called("views.open")[-1]["view"])


def _inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def _as_shown(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The state Slack sends for the form submitted exactly as it was opened."""
    values: dict[str, dict[str, Any]] = {}
    for block_id, block in _inputs(view).items():
        element = block["element"]
        kind = element["type"]
        if kind == "checkboxes":
            values[block_id] = {
                "type": kind,
                "selected_options": element.get("initial_options", []),
            }
        elif kind == "static_select":
            values[block_id] = {"type": kind, "selected_option": element.get("initial_option")}
        elif kind == "datepicker":
            values[block_id] = {"type": kind, "selected_date": element.get("initial_date")}
        elif kind == "datetimepicker":
            values[block_id] = {
                "type": kind,
                "selected_date_time": element.get("initial_date_time"),
            }
        else:
            values[block_id] = {"type": kind, "value": element.get("initial_value")}
    return values


def _agent(fn: Tool, args: dict[str, Any]) -> AgentSpec:
    """An agent whose model calls ``fn`` with ``args``, asked in CHANNEL of ALICE."""

    def build(store: SessionStore) -> Agent:
        model = OneToolModel(fn.name, args)
        return Agent(
            model=model, tools=[fn], interrupt_on={fn.name: True}, session_store=store, name="a"
        )

    return AgentSpec(name="a", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def _edit_one_field(
    make_bot: Callable[..., Any], fn: Tool, args: dict[str, Any], field: str, text: str
) -> None:
    """Start the agent, change ``field`` alone to ``text`` in its form, and run it."""
    bot: Harness = await make_bot(spec=_agent(fn, args))
    view = await _form(bot, await bot.start())
    state = _as_shown(view)
    state[f"arg.{field}"] = {"type": "plain_text_input", "value": text}
    status, body = await bot.submit_form(view["private_metadata"], user=ALICE, values=state)
    assert status == 200 and "errors" not in body, body
    await bot.finished()


async def test_a_flag_left_to_its_default_keeps_its_default(make_bot: Any) -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def migrate(database: str, dry_run: bool = True) -> str:
        """Migrate a database (a dry run unless told otherwise)."""
        ran.append({"database": database, "dry_run": dry_run})
        return "migrated"

    await _edit_one_field(make_bot, migrate, {"database": "orders"}, "database", "staging")
    assert ran == [{"database": "staging", "dry_run": True}]


async def test_an_empty_string_and_a_null_are_kept_not_replaced_by_defaults(
    make_bot: Any,
) -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def tag(version: str, suffix: str = "-rc", limit: int | None = 100) -> str:
        """Tag a release; no suffix for a final one; no limit with None."""
        ran.append({"version": version, "suffix": suffix, "limit": limit})
        return "tagged"

    asked = {"version": "2.4.0", "suffix": "", "limit": None}
    await _edit_one_field(make_bot, tag, asked, "version", "2.4.1")
    assert ran == [{"version": "2.4.1", "suffix": "", "limit": None}]


async def test_a_list_of_strings_left_as_shown_keeps_its_items(make_bot: Any) -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def announce(channel: str, messages: list[str]) -> str:
        """Post each message."""
        ran.append({"channel": channel, "messages": messages})
        return "posted"

    shown = ["Deploy done.\nRollback plan: none needed.", "  - indented item", ""]
    await _edit_one_field(
        make_bot, announce, {"channel": "#ops", "messages": shown}, "channel", "#eu"
    )
    assert ran == [{"channel": "#eu", "messages": shown}]


async def test_a_refused_form_says_why_under_one_of_its_own_fields(make_bot: Any) -> None:
    @tool
    def resize(service: str, replicas: int) -> str:
        """Resize a service."""
        return "resized"

    bot: Harness = await make_bot(spec=_agent(resize, {"service": "web", "replicas": 3}))
    view = await _form(bot, await bot.start())
    state = _as_shown(view)
    state["arg.replicas"] = {"type": "number_input", "value": "5"}
    status, body = await bot.submit_form(view["private_metadata"], user=MALLORY, values=state)
    assert status == 200
    errors = json.loads(body)["errors"]
    # Slack shows an error only under a block of the view; any other key fails the submit.
    assert list(errors) == ["arg.service"], errors
    assert errors["arg.service"].startswith("You are not among the approvers")
    assert "<@" not in errors["arg.service"]  # a modal's errors are plain text


async def test_a_form_too_long_for_slack_is_not_offered(make_bot: Any) -> None:
    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        return "written"

    script = "\n".join(f"DELETE FROM audit WHERE id = {n};" for n in range(200))
    assert len(script) > 3000  # a migration script: ordinary tool input
    bot: Harness = await make_bot(spec=_agent(write_file, {"path": "/a.sql", "content": script}))
    view = await _form(bot, await bot.start())
    check_modal(view)  # Slack refuses a text input that starts longer than 3,000 characters
    assert "too long to edit in Slack" in str(view["blocks"])


@asynccontextmanager
async def _job(bot: Harness) -> AsyncIterator[tuple[str, str]]:
    """The requests API of ``bot``: its address, and a job's token."""
    _, token = await bot.services.storage.api_clients.create(
        "nightly", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    app = operator_app(bot.services, api_token=SecretStr("admin-" + "x" * 30))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}", token
    finally:
        await server.close()


async def test_a_jobs_params_left_as_shown_keep_every_digit_and_empty_text(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    params = [
        {"name": "amount_cents", "type": "number", "value": 12345678901234567891, "editable": True},
        {"name": "note", "type": "string", "value": "", "editable": True},
        {"name": "memo", "type": "string", "value": "march", "editable": True},
    ]
    async with _job(bot) as (base, token), aiohttp.ClientSession() as http:
        auth = {"Authorization": f"Bearer {token}"}
        body = {"title": "Pay", "channel": CHANNEL, "approvers": [ALICE], "params": params}
        async with http.post(base + REQUESTS_PATH, json=body, headers=auth) as r:
            made = await r.json()
        await bot.slack.wait_calls("chat.postMessage")
        view = await _form(bot, str(bot.posted()["blocks"][-1]["elements"][0]["value"]))
        state = _as_shown(view)
        state["arg.memo"] = {"type": "plain_text_input", "value": "march, corrected"}
        status, said = await bot.submit_form(view["private_metadata"], user=ALICE, values=state)
        assert status == 200 and "errors" not in said, said
        async with http.get(base + made["status_url"] + "?wait=10", headers=auth) as r:
            answer = await r.json()
    assert answer["status"] == "edited", answer
    assert answer["params"] == {
        "amount_cents": 12345678901234567891,
        "note": "",
        "memo": "march, corrected",
    }


def test_a_whole_number_typed_in_keeps_every_digit() -> None:
    [amount] = fields_of({"type": "object", "properties": {"amount": {"type": "number"}}}) or []
    typed = {amount.block_id: {ACTION: {"type": "number_input", "value": "12345678901234567891"}}}
    assert read_args([amount], typed, {"amount": 1}) == ({"amount": 12345678901234567891}, {})


async def test_a_flag_on_by_default_is_shown_on_and_can_be_turned_off(make_bot: Any) -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def purge(bucket: str, delete_snapshots: bool = True) -> str:
        """Purge a bucket, and its snapshots unless told otherwise."""
        ran.append({"bucket": bucket, "delete_snapshots": delete_snapshots})
        return "purged"

    bot: Harness = await make_bot(spec=_agent(purge, {"bucket": "logs"}))
    view = await _form(bot, await bot.start())
    assert _inputs(view)["arg.delete_snapshots"]["element"]["initial_options"]  # as it runs
    state = _as_shown(view)
    state["arg.delete_snapshots"] = {"type": "checkboxes", "selected_options": []}
    status, body = await bot.submit_form(view["private_metadata"], user=ALICE, values=state)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert ran == [{"bucket": "logs", "delete_snapshots": False}]


async def test_a_required_argument_shown_empty_can_be_left_empty(make_bot: Any) -> None:
    """Slack will not submit a form whose required input is empty: an argument the call
    gives as an empty string or a null is shown empty, and must not block an edit of
    another field (it is kept as it was)."""
    ran: list[dict[str, Any]] = []

    @tool
    def notify(channel: str, note: str, limit: int | None) -> str:
        """Notify a channel, with a note and an optional limit."""
        ran.append({"channel": channel, "note": note, "limit": limit})
        return "notified"

    asked = {"channel": "ops", "note": "", "limit": None}
    bot: Harness = await make_bot(spec=_agent(notify, asked))
    view = await _form(bot, await bot.start())
    values, refused = state_values(view["blocks"], {"arg.channel": {ACTION: "ops-eu"}})
    assert refused == {}, refused  # what Slack's client checks before it submits
    state = {block: inputs[ACTION] for block, inputs in values.items()}
    status, body = await bot.submit_form(view["private_metadata"], user=ALICE, values=state)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert ran == [{"channel": "ops-eu", "note": "", "limit": None}]
