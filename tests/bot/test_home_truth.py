"""What App Home and ``/signoff`` say of a request is what storage holds: a decision
waiting out its undo window, a withdrawn request, and the counts beside each list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from agui_endpoint import Endpoint, answer_one, ask_one
from aiohttp.test_utils import TestServer
from fakes import click_payload, home_click_payload
from harness import ALICE, BOB, CAROL, CHANNEL, Harness
from home_lists import (
    ROTA,
    TEAMS,
    ask,
    button,
    last_home,
    named_requests,
    open_home,
    redrawn,
    turn_page,
)
from pydantic import SecretStr
from test_stale_approvals import cleanup

from bot.agents.policy import Escalate, Policy
from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app
from bot.schedule.scheduler import Scheduler
from bot.ui import ids


async def test_a_decision_in_its_undo_window_is_not_offered_again_in_home(make_bot: Any) -> None:
    """Approved from Home with an undo window, the request is decided, not yet final: the
    Home that says so offers no Approve or Deny for it, nor does another approver's."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), undo_window=timedelta(seconds=60))
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await open_home(bot, BOB)
    assert button(await open_home(bot, ALICE), ids.HOME_APPROVE) is not None

    approve = home_click_payload(user=ALICE, action_id=ids.HOME_APPROVE, value=value)
    home = await redrawn(bot, bot.send(approve), ALICE)
    assert "unless someone clicks Undo on its card" in str(home[0])
    assert button(home, ids.HOME_APPROVE) is None and button(home, ids.HOME_DENY) is None
    assert f"Approved by <@{ALICE}>, not yet final" in str(home)
    await bot.slack.wait_for(
        lambda: button(last_home(bot, BOB), ids.HOME_APPROVE) is None, what="Bob's Home redrawn"
    )
    assert button(last_home(bot, BOB), ids.HOME_DENY) is None
    listed = await bot.command("", user=BOB)
    assert f"Approved by <@{ALICE}>, not yet final" in str(listed["blocks"])


async def test_a_click_held_in_its_undo_window_redraws_the_approvers_homes(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), undo_window=timedelta(seconds=60))
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    assert button(await open_home(bot, BOB), ids.HOME_DENY) is not None
    home = await redrawn(bot, bot.click(ids.APPROVE, value, user=ALICE), BOB)
    assert button(home, ids.HOME_APPROVE) is None and button(home, ids.HOME_DENY) is None
    assert f"Approved by <@{ALICE}>, not yet final" in str(home)


async def test_a_request_its_job_withdrew_leaves_the_approvers_homes(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    _, token = await bot.services.storage.api_clients.create(
        "demo-job", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    app = operator_app(bot.services, api_token=SecretStr("admin-token-" + "x" * 24))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    base, auth = f"http://127.0.0.1:{server.port}", {"Authorization": f"Bearer {token}"}
    body = {"channel": CHANNEL, "title": "Rotate keys", "approvers": [ALICE]}
    try:
        async with aiohttp.ClientSession(headers=auth) as http:
            async with http.post(base + REQUESTS_PATH, json=body) as response:
                assert response.status == 201, await response.text()
                made = await response.json()
            await bot.slack.wait_calls("chat.postMessage")
            assert "Rotate keys" in str(await open_home(bot, ALICE))
            withdraw = http.post(base + made["status_url"] + "/withdraw", json={})
            async with withdraw as response:
                assert response.status == 200, await response.text()
    finally:
        await server.close()
    await bot.slack.wait_for(
        lambda: "Rotate keys" not in str(last_home(bot, ALICE)), what="Alice's Home redrawn"
    )
    assert "Nothing is waiting for your decision." in str(last_home(bot, ALICE))


async def test_a_request_its_app_answered_leaves_the_approvers_homes(endpoint: Endpoint) -> None:
    """An AG-UI app's answer decides the card as a click would: the Home that listed it
    no longer does."""
    bot = endpoint.bot
    interrupt, _ = await ask_one(endpoint, "thread-home")
    assert button(await open_home(bot, ALICE), ids.HOME_APPROVE) is not None
    await answer_one(
        endpoint, "thread-home", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    await bot.slack.wait_for(
        lambda: "Nothing is waiting for your decision." in str(last_home(bot, ALICE)),
        what="Alice's Home redrawn",
    )


async def test_every_page_of_a_list_counts_all_that_waits_as_its_entries_do(
    make_bot: Any,
) -> None:
    """25 requests wait for Alice: each page of Home and of ``/signoff`` says 25 wait,
    beside which of them it shows, not how many it holds."""
    bot: Harness = await make_bot()
    bot.slack.groups[ROTA] = [ALICE, BOB]
    await ask(bot, named_requests(0, 25))

    home = await open_home(bot)
    assert home[0]["text"]["text"] == "Waiting for you: 25"
    assert "Showing 1 to 17 of 25" in str(home[1])
    next_page = button(home, ids.NEXT_PAGE)
    assert next_page is not None
    rest = await turn_page(bot, ids.NEXT_PAGE, next_page["value"])
    assert rest[0]["text"]["text"] == "Waiting for you: 25"
    assert "Showing 18 to 25 of 25" in str(rest[1])

    listed = await bot.command("", user=ALICE)
    assert listed["text"] == "25 waiting for you" and len(listed["blocks"]) <= 50
    assert listed["blocks"][0]["text"]["text"] == "Waiting for you: 25"
    assert "Showing 1 to 23 of 25" in str(listed["blocks"][1])
    more = button(listed["blocks"], ids.NEXT_PAGE)
    assert more is not None
    payload = click_payload(
        action_id=ids.NEXT_PAGE,
        value=more["value"],
        user=ALICE,
        channel=TEAMS[0],
        message_ts="1700000000.000100",
    )
    payload["response_url"] = bot.slack.response_url
    await bot.send(payload)
    await bot.slack.wait_calls("response_url")
    [page] = bot.slack.called("response_url")
    assert page["text"] == "25 waiting for you"
    assert page["blocks"][0]["text"]["text"] == "Waiting for you: 25"
    assert "Showing 24 to 25 of 25" in str(page["blocks"][1])


async def test_home_says_what_happens_if_nobody_decides_and_offers_nothing_once_time_ran_out(
    make_bot: Any,
) -> None:
    """Home says, as the card does, that the request goes to @lead when nobody decides in
    time (it does not "expire" then); once its time ran out, before the sweep takes it,
    it says so and offers no decision a click could no longer make."""
    lead = "U0LEAD"
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=1),
        on_expiry=Escalate(users=(lead,), expires_after=timedelta(hours=1)),
    )
    bot: Harness = await make_bot(policy)
    await bot.start(requested_by=CAROL)
    listed = str(await open_home(bot, ALICE))
    assert "If nobody decides by <!date^" in listed and f"it goes to <@{lead}>" in listed
    assert "expires <!date^" not in listed
    bot.clock.advance(timedelta(hours=1, seconds=1))  # the sweep has not run yet
    home = await open_home(bot, ALICE)
    assert "Time ran out <!date^" in str(home) and "If nobody decides" not in str(home)
    assert button(home, ids.HOME_APPROVE) is None and button(home, ids.HOME_DENY) is None


async def test_a_call_whose_card_shows_what_it_acts_on_is_decided_on_its_card(
    make_bot: Any,
) -> None:
    """The card lists the volumes the call will delete, which Home does not show: Home
    links to it, and offers no Approve beside arguments that do not say what they delete."""
    volumes = [{"id": "vol-a", "gb": 10, "days": 400}]
    bot: Harness = await make_bot(spec=cleanup(volumes, []))
    await bot.start(requested_by=CAROL)
    assert "vol-a" in str(bot.posted(0)["blocks"])
    home = await open_home(bot, ALICE)
    assert "wants to run `delete_volumes`" in str(home)
    assert button(home, ids.HOME_APPROVE) is None and button(home, ids.HOME_DENY) is None


async def test_deny_from_a_home_drawn_before_the_request_expired_says_it_expired(
    make_bot: Any,
) -> None:
    """Nobody decided it: the notice says it expired, not that it was decided already."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    assert button(await open_home(bot, ALICE), ids.HOME_DENY) is not None
    bot.clock.advance(timedelta(days=2))
    await Scheduler(bot.services).tick()
    deny = home_click_payload(user=ALICE, action_id=ids.HOME_DENY, value=value)
    home = await redrawn(bot, bot.send(deny), ALICE)
    assert "Already expired; your click changed nothing." in str(home[0])
    assert bot.slack.called("views.open") == []


async def test_a_vote_on_the_card_redraws_the_voters_home_without_approve(make_bot: Any) -> None:
    """Alice's approval counts toward the quorum: the Home she has open says so, and
    offers her Deny alone, as it would once opened again."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    value = await bot.start(requested_by=CAROL)
    assert button(await open_home(bot, ALICE), ids.HOME_APPROVE) is not None
    home = await redrawn(bot, bot.click(ids.APPROVE, value, user=ALICE), ALICE)
    assert button(home, ids.HOME_APPROVE) is None and button(home, ids.HOME_DENY) is not None
    assert "Your approval is counted (1 of 2)" in str(home)
