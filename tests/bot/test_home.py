"""App Home: requests can be decided from the list, a refused one says why there, and a
decision redraws the Home of the approvers who look at it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from batch_agents import spec as forty_deletions
from fakes import home_click_payload
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness
from home_lists import button
from pydantic import SecretStr
from redis_faults import reply_lost_once

from bot.agents.policy import Escalate, Policy
from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.listing import MAX_GRANTS, trust_blocks
from storage.trust_grants import TrustGrant


def _home(bot: Harness, user: str) -> list[dict[str, Any]]:
    views = [c for c in bot.slack.called("views.publish") if c["user_id"] == user]
    return views[-1]["view"]["blocks"] if views else []


LIMIT = {"name": "limit", "type": "integer", "value": 42}


async def _ask(bot: Harness, *requests: dict[str, Any]) -> None:
    """Post ``requests`` as the job ``demo-job`` through the requests API; their cards posted."""
    _, token = await bot.services.storage.api_clients.create(
        "demo-job", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    app = operator_app(bot.services, api_token=SecretStr("admin-token-" + "x" * 24))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            for body in requests:
                async with http.post(
                    f"http://127.0.0.1:{server.port}{REQUESTS_PATH}",
                    json={"channel": CHANNEL, **body},
                    headers={"Authorization": f"Bearer {token}"},
                ) as response:
                    assert response.status == 201, await response.text()
    finally:
        await server.close()


async def _open_home(bot: Harness, user: str) -> list[dict[str, Any]]:
    """``user``'s Home once drawn for this opening (others' Homes may be redrawn meanwhile)."""

    def drawn() -> int:
        return sum(c["user_id"] == user for c in bot.slack.called("views.publish"))

    before = drawn()
    await bot.event({"type": "app_home_opened", "user": user, "tab": "home"})
    await bot.slack.wait_for(lambda: drawn() > before, what=f"{user}'s Home")
    return _home(bot, user)


async def test_opening_the_messages_tab_neither_draws_home_nor_counts_as_looking_at_it(
    make_bot: Any,
) -> None:
    """Slack sends ``app_home_opened`` for the app's Messages tab too (where a DM card or a
    notice is read): Home is not drawn for it, nor is its viewer redrawn after decisions."""
    bot: Harness = await make_bot()
    await bot.start(requested_by=CAROL)
    await bot.event({"type": "app_home_opened", "user": ALICE, "tab": "messages"})
    await bot.services.background.idle()
    assert bot.slack.called("views.publish") == []
    viewers = await bot.services.storage.home.recent([ALICE], bot.clock.now())
    assert viewers == {}


async def test_approve_from_app_home_runs_the_tool_and_redraws_every_open_home(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    home = await _open_home(bot, ALICE)
    await _open_home(bot, BOB)
    assert '"/tmp/a"' in str(home)  # the arguments in full beside the buttons
    approve = button(home, ids.HOME_APPROVE)
    assert approve is not None and approve["value"] == value
    assert button(home, ids.HOME_DENY) is not None

    published = len(bot.slack.called("views.publish"))
    await bot.send(
        home_click_payload(user=ALICE, action_id=ids.HOME_APPROVE, value=approve["value"])
    )
    await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    # The card is redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_calls("chat.update")
    card = bot.slack.called("chat.update")[-1]
    assert f"Approved by <@{ALICE}>" in str(card["blocks"])
    # Both approvers had Home open: both are redrawn without the request.
    await bot.slack.wait_for(
        lambda: (
            {c["user_id"] for c in bot.slack.called("views.publish")[published:]} >= {ALICE, BOB}
        ),
        what="both Homes redrawn",
    )
    assert button(_home(bot, BOB), ids.HOME_APPROVE) is None


async def test_a_refused_home_decision_says_why_on_home_and_changes_nothing(make_bot: Any) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    value = await bot.start(requested_by=CAROL)
    await bot.send(home_click_payload(user=MALLORY, action_id=ids.HOME_APPROVE, value=value))
    await bot.slack.wait_for(lambda: bool(_home(bot, MALLORY)), what="Mallory's Home")
    assert "not among the approvers" in str(_home(bot, MALLORY)[0])
    stale = value.split(" ")[0] + " " + "0" * 64  # arguments other than those shown
    await bot.send(home_click_payload(user=ALICE, action_id=ids.HOME_APPROVE, value=stale))
    await bot.slack.wait_for(lambda: bool(_home(bot, ALICE)), what="Alice's Home")
    assert "arguments changed" in str(_home(bot, ALICE)[0])
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert bot.tool_log.calls == []


async def test_home_offers_no_approve_to_someone_whose_approval_already_counts(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    alices = await _open_home(bot, ALICE)
    assert button(alices, ids.HOME_APPROVE) is None and button(alices, ids.HOME_DENY)
    assert "Your approval is counted (1 of 2)" in str(alices)
    assert button(await _open_home(bot, BOB), ids.HOME_APPROVE) is not None


async def test_a_request_open_to_its_channel_is_decided_on_its_card_only(make_bot: Any) -> None:
    """Seeing the card is what shows someone is in the channel: a Home click, or a Deny
    form opened from Home, by someone who is not is refused."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, anyone_in_channel=True))
    value = await bot.start(requested_by=CAROL)
    await bot.send(home_click_payload(user=MALLORY, action_id=ids.HOME_APPROVE, value=value))
    await bot.slack.wait_for(lambda: bool(_home(bot, MALLORY)), what="Mallory's Home")
    assert "not among the approvers" in str(_home(bot, MALLORY)[0])
    status, body = await bot.submit(ids.DENY_VIEW, value, user=MALLORY, text="no")
    assert status == 200 and "errors" in body, body
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    await bot.click(ids.APPROVE, value, user=BOB)  # a member, on the card
    await bot.finished()
    assert bot.tool_log.calls != []


async def test_deny_from_app_home_opens_the_reason_modal(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    await bot.send(home_click_payload(user=BOB, action_id=ids.HOME_DENY, value=value))
    await bot.slack.wait_calls("views.open")
    view = bot.slack.called("views.open")[-1]["view"]
    assert view["callback_id"] == ids.DENY_VIEW and view["private_metadata"] == value
    status, body = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not this week")
    assert status == 200 and "errors" not in body
    await bot.finished()
    assert bot.tool_log.calls == []


async def test_requests_open_to_a_channel_are_listed_for_its_members_with_a_link(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, anyone_in_channel=True))
    await bot.start(requested_by=CAROL)
    bot.slack.channels_of[MALLORY] = [CHANNEL]
    home = await _open_home(bot, MALLORY)
    assert "Open to everyone in your channels" in str(home)
    assert "*cleanup* wants to run `delete_files`" in str(home)
    # Decided on the card, in the channel: no Approve in Home for these.
    assert button(home, ids.HOME_APPROVE) is None
    assert "https://fake.slack.test/archives/C0OPS/" in str(home)

    outsider = await _open_home(bot, BOB)  # in no channel of the request
    assert "Open to everyone" not in str(outsider)


async def test_a_request_open_to_a_channel_is_listed_however_many_channels_come_before_it(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, anyone_in_channel=True))
    await bot.start(requested_by=CAROL)
    quiet = [f"C0QUIET{n:03d}" for n in range(260)]  # no request waits in these; Slack
    # lists them 200 to a page
    bot.slack.channels_of[MALLORY] = [*quiet, CHANNEL]
    home = await _open_home(bot, MALLORY)
    assert "*cleanup* wants to run `delete_files`" in str(home)


async def test_a_decision_redraws_the_home_of_approvers_who_opened_it_this_week_only(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB, MALLORY)))
    await _open_home(bot, ALICE)
    bot.clock.advance(timedelta(days=2))
    await _open_home(bot, BOB)
    bot.clock.advance(timedelta(days=6))  # Alice opened Home 8 days ago, Bob 6
    value = await bot.start(requested_by=CAROL)
    published = len(bot.slack.called("views.publish"))
    await bot.click(ids.APPROVE, value, user=MALLORY)
    # Alice is named before Bob, so her Home would be redrawn before his.
    await bot.slack.wait_for(
        lambda: any(c["user_id"] == BOB for c in bot.slack.called("views.publish")[published:]),
        what="Bob's Home redrawn",
    )
    redrawn = [c["user_id"] for c in bot.slack.called("views.publish")[published:]]
    assert redrawn == [BOB]


async def test_a_jobs_batch_is_one_row_naming_its_items_and_its_title_reads_as_a_request(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    items = ["a.txt", "b.txt", "c.txt"]
    await _ask(
        bot,
        {"title": "anyone req", "anyone_in_channel": True, "items": items},
        {"title": "Rotate keys", "approvers": [ALICE], "params": [LIMIT]},
        {"title": "Purge caches", "approvers": [ALICE], "items": items},
    )
    bot.slack.channels_of[ALICE] = [CHANNEL]
    home = await _open_home(bot, ALICE)
    text = str(home)
    assert text.count("*demo-job* asks: anyone req, 3 items") == 1
    assert "*demo-job* asks: Rotate keys" in text and "wants to run" not in text
    assert text.count("*demo-job* asks: Purge caches, 3 items") == 1
    assert "Waiting for you: 2" in text
    # A batch is decided on its card, by ticking items: only the lone request has buttons.
    decide = [e for b in home if b.get("block_id", "").startswith("home ") for e in b["elements"]]
    assert [e["action_id"] for e in decide] == [ids.HOME_APPROVE, ids.HOME_DENY]
    listed = await bot.command("", user=ALICE)
    assert listed["text"] == "2 waiting for you"  # cards, as the list counts them
    assert str(listed["blocks"]).count("Purge caches, 3 items") == 1


async def test_an_agents_batch_is_one_row_that_still_names_its_tool(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=forty_deletions([]))
    await bot.start(requested_by=CAROL)
    home = await _open_home(bot, ALICE)
    rows = [b for b in home if "wants to run" in str(b)]
    # A page holds 17 of the 40 items; the size is known from the lead, when it is among them.
    assert len(rows) == 1
    assert re.fullmatch(
        r"\*cleanup\* wants to run `delete_file`, (40|17\+) calls", rows[0]["text"]["text"]
    )
    assert rows[0]["accessory"]["action_id"] == ids.OPEN_PENDING
    assert button(home, ids.HOME_APPROVE) is None and len(home) <= 100


async def test_an_approval_from_home_whose_reply_redis_lost_is_taken_not_refused(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    await _open_home(bot, ALICE)
    published = len(bot.slack.called("views.publish"))
    with reply_lost_once(naming=bot.record_id(value)) as lost:
        await bot.send(home_click_payload(user=ALICE, action_id=ids.HOME_APPROVE, value=value))
        await bot.finished()
    assert lost == ["EVALSHA"]
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("views.publish")) > published, what="Alice's Home redrawn"
    )
    assert "changed nothing" not in str(bot.slack.called("views.publish")[published:])
    assert bot.services.metrics.decisions == {"approved": 1}  # its first send's, counted


def test_trust_grants_past_what_home_lists_are_counted_not_dropped() -> None:
    """The header counts every grant; those Home has no room for are said to exist."""
    now = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    grants = [
        TrustGrant(
            id=f"trust_{n}",
            agent="cleanup",
            tool="delete_files",
            channel=CHANNEL,
            granted_by=ALICE,
            granted_at=now,
            expires_at=now + timedelta(hours=1),
            record_id=f"run_{n}:int_{n}",
        )
        for n in range(MAX_GRANTS + 2)
    ]
    blocks = trust_blocks(grants)
    assert blocks[0]["text"]["text"] == f"Trust in force: {MAX_GRANTS + 2}"
    assert sum(1 for b in blocks if b.get("accessory")) == MAX_GRANTS
    assert blocks[-1]["elements"][0]["text"] == (
        "And 2 more, listed here as these end or are revoked."
    )


async def test_an_escalation_open_to_another_channel_is_listed_for_its_members(
    make_bot: Any,
) -> None:
    """Each step open to its channel's members lists the request in their Home once it is
    reached, and while they may decide it (an earlier step's members still may, on its
    card); someone only in the first channel, where Alice alone decides, never sees it."""
    first, second, dana = "C0ESCONE", "C0ESCTWO", "U0DANA"
    step = timedelta(minutes=30)
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=step,
        on_expiry=(
            Escalate(channel=first, anyone_in_channel=True, expires_after=step),
            Escalate(channel=second, anyone_in_channel=True, expires_after=step),
        ),
    )
    bot: Harness = await make_bot(policy)
    bot.slack.channels_of.update({BOB: [CHANNEL], MALLORY: [first], dana: [second]})
    value = await bot.start(requested_by=CAROL)
    listed = "*cleanup* wants to run `delete_files`"

    async def sees(user: str) -> bool:
        """Whether ``user``'s Home, opened now, lists the request (another's redraw aside)."""
        mine = len([c for c in bot.slack.called("views.publish") if c["user_id"] == user])
        await bot.event({"type": "app_home_opened", "user": user, "tab": "home"})
        await bot.slack.wait_for(
            lambda: (
                len([c for c in bot.slack.called("views.publish") if c["user_id"] == user]) > mine
            ),
            what=f"{user}'s Home",
        )
        return listed in str(_home(bot, user))

    assert [await sees(u) for u in (BOB, MALLORY, dana)] == [False, False, False]
    bot.clock.advance(step + timedelta(minutes=1))
    await Scheduler(bot.services).tick()
    assert [await sees(u) for u in (BOB, MALLORY, dana)] == [False, True, False]
    bot.clock.advance(step + timedelta(minutes=1))
    await Scheduler(bot.services).tick()
    assert [await sees(u) for u in (BOB, MALLORY, dana)] == [False, True, True]

    second_ts = next(
        str(a["ts"]) for a in bot.slack.answers("chat.postMessage") if a["channel"] == second
    )
    await bot.click(ids.APPROVE, value, user=dana, channel=second, message_ts=second_ts)
    await bot.finished()
    assert [await sees(u) for u in (MALLORY, dana)] == [False, False]
    left = await bot.services.storage.queries.pending_open_in([CHANNEL, first, second])
    assert left.total == 0
