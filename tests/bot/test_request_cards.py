"""A job's card as approvers see it (over real HTTP, through the Bolt app): its details
escaped, and when too long for it, whole in "Full details"; a dangerous job's Approve asks
to confirm."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from blockkit import check_message
from harness import ALICE, BOB, CHANNEL, Harness

from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app
from bot.ui import ids

LINE = "vol-7 <!channel> & <b>\n"
Ask = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
async def bot(make_bot: Any) -> Harness:
    harness: Harness = await make_bot()
    return harness


@pytest.fixture
async def ask(bot: Harness) -> AsyncIterator[Ask]:
    """Makes a request as the client ``nightly-cleanup``; answers the card it posted."""
    _, token = await bot.services.storage.api_clients.create(
        "nightly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()

    async def asking(**fields: Any) -> dict[str, Any]:
        body = {"title": "Delete stale volumes", "channel": CHANNEL, "approvers": [ALICE, BOB]}
        headers = {"Authorization": f"Bearer {token}"}
        url = f"http://127.0.0.1:{api.port}{REQUESTS_PATH}"
        async with bot.http.post(url, json=body | fields, headers=headers) as r:
            assert r.status == 201, await r.text()
        return bot.posted()

    yield asking
    await api.close()


def _buttons(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        e["action_id"]: e for b in card["blocks"] if b["type"] == "actions" for e in b["elements"]
    }


async def test_long_details_are_cut_on_the_card_and_shown_whole_in_full_details(
    bot: Harness, ask: Ask
) -> None:
    card = await ask(details=LINE * 1500)  # 34,500 characters: more than a card holds
    check_message(card["text"], card["blocks"])
    shown = json.dumps(card["blocks"])
    assert "<!channel>" not in shown and "&lt;!channel&gt;" in shown
    assert shown.count("vol-7") < 1500  # cut
    full = _buttons(card)[ids.FULL_ARGS]
    assert full["text"]["text"] == "Full details"

    await bot.click(ids.FULL_ARGS, full["value"], user=BOB)
    await bot.slack.wait_calls("views.open")
    modal = bot.slack.called("views.open")[-1]["view"]
    assert modal["title"]["text"] == "Full details"
    text = "".join(b["text"]["text"] for b in modal["blocks"] if "text" in b)
    assert text.count("vol-7 &lt;!channel&gt; &amp; &lt;b&gt;") == 1500  # whole, escaped
    assert "<!channel>" not in text


async def test_a_dangerous_jobs_approve_asks_to_confirm_naming_the_job_and_what_it_does(
    ask: Ask,
) -> None:
    assert "confirm" not in _buttons(await ask())[ids.APPROVE]
    confirm = _buttons(await ask(dangerous=True))[ids.APPROVE]["confirm"]
    assert confirm["title"]["text"] == "Approve Delete stale volumes?"
    assert confirm["text"]["text"] == (
        "nightly-cleanup will run Delete stale volumes. This action is marked dangerous."
    )
    assert confirm["style"] == "danger"
