"""App Home keeps each list on the page its viewer was on: a decision from Home (Approve,
or Deny and its reason), a refusal shown on top, and the redraw of other approvers' Home
show the same pages, the last one if the list got shorter; a place that is not one
starts from the first pages."""

from __future__ import annotations

from typing import Any

from fakes import home_click_payload
from harness import ALICE, BOB, Harness
from home_lists import (
    ROTA,
    TEAMS,
    ask,
    button,
    last_home,
    named_requests,
    open_home,
    open_requests,
    redrawn,
    titles,
    turn_page,
)

from bot.ui import ids

Blocks = list[dict[str, Any]]
LIMIT = {"name": "limit", "type": "integer", "value": 42}


def _decidable(count: int) -> list[dict[str, Any]]:
    """``count`` requests naming Alice with an argument: each has Approve and Deny in Home."""
    return [{**request, "params": [LIMIT]} for request in named_requests(0, count)]


def _names(first: int, stop: int) -> list[str]:
    return [f"named {n:02d}" for n in range(first, stop)]


def _opens(first: int, stop: int) -> list[str]:
    return [f"open {n:02d}" for n in range(first, stop)]


async def _both_on_page_two(bot: Harness, user: str = ALICE) -> Blocks:
    """Open ``user``'s Home, then the second page of each list."""
    home = await open_home(bot, user)
    next_page = button(home, ids.NEXT_PAGE)
    assert next_page is not None
    later = await turn_page(bot, ids.NEXT_PAGE, next_page["value"], user)
    more = button(later, ids.HOME_OPEN_PAGE)
    assert more is not None
    return await turn_page(bot, ids.HOME_OPEN_PAGE, more["value"], user)


async def _click(bot: Harness, action_id: str, value: str, user: str = ALICE) -> Blocks:
    """``user``'s Home once a click on a Home button has it redrawn."""
    click = home_click_payload(user=user, action_id=action_id, value=value)
    return await redrawn(bot, bot.send(click), user)


def _decide_value(home: Blocks, action_id: str) -> str:
    """The value of the first Approve or Deny in ``home`` (the first request it lists)."""
    found = button(home, action_id)
    assert found is not None
    value: str = found["value"]
    return value


async def test_a_decision_from_home_redraws_each_list_on_the_page_it_was_on(
    make_bot: Any,
) -> None:
    """40 requests name Alice (three pages) and 12 are open to her channels (three pages):
    on the second page of each, approving one, denying one with a reason, a refused click
    and a Revoke all redraw Home on both second pages; opening the tab starts over."""
    bot: Harness = await make_bot()
    bot.slack.groups[ROTA] = [ALICE, BOB]
    bot.slack.channels_of[ALICE] = TEAMS
    await ask(bot, [*_decidable(40), *open_requests(0, 12)])
    home = await _both_on_page_two(bot)
    assert titles(home, "named") == _names(17, 34)
    assert titles(home, "open") == _opens(5, 10)

    approved = await _click(bot, ids.HOME_APPROVE, _decide_value(home, ids.HOME_APPROVE))
    assert titles(approved, "named") == _names(18, 35)
    assert "Showing 18 to 34 of 39" in str(approved)
    assert titles(approved, "open") == _opens(5, 10)
    assert "Showing 6 to 10 of 12" in str(approved)

    deny = _decide_value(approved, ids.HOME_DENY)
    await bot.send(home_click_payload(user=ALICE, action_id=ids.HOME_DENY, value=deny))
    await bot.slack.wait_calls("views.open")
    denied = await redrawn(bot, bot.submit(ids.DENY_VIEW, deny, user=ALICE, text="not now"))
    assert titles(denied, "named") == _names(19, 36)
    assert titles(denied, "open") == _opens(5, 10)

    stale = _decide_value(denied, ids.HOME_APPROVE).split(" ")[0] + " " + "0" * 64
    refused = await _click(bot, ids.HOME_APPROVE, stale)
    assert "arguments changed" in str(refused[0])
    assert titles(refused, "named") == _names(19, 36)
    assert titles(refused, "open") == _opens(5, 10)

    revoked = await _click(bot, ids.REVOKE_TRUST, "trust_gone")  # any redraw keeps them
    assert titles(revoked, "named") == _names(19, 36)
    assert titles(revoked, "open") == _opens(5, 10)

    reopened = await open_home(bot)  # opening the tab starts from the first pages
    assert titles(reopened, "named") == _names(0, 17)
    refused = await _click(bot, ids.HOME_APPROVE, stale)
    assert titles(refused, "named") == _names(0, 17)
    assert titles(refused, "open") == _opens(0, 5)


async def test_deciding_the_only_request_on_the_last_page_redraws_the_new_last_page(
    make_bot: Any,
) -> None:
    """35 requests name Alice: the third page holds one. Approving it from there leaves
    the list two pages long, and Home shows the second, the other list still on its own."""
    bot: Harness = await make_bot()
    bot.slack.groups[ROTA] = [ALICE, BOB]
    bot.slack.channels_of[ALICE] = TEAMS
    await ask(bot, [*_decidable(35), *open_requests(0, 7)])
    home = await _both_on_page_two(bot)
    next_page = button(home, ids.NEXT_PAGE)
    assert next_page is not None
    third = await turn_page(bot, ids.NEXT_PAGE, next_page["value"])
    assert titles(third, "named") == ["named 34"]
    assert titles(third, "open") == _opens(5, 7)

    clamped = await _click(bot, ids.HOME_APPROVE, _decide_value(third, ids.HOME_APPROVE))
    assert titles(clamped, "named") == _names(17, 34)
    assert "Showing 18 to 34 of 34" in str(clamped)
    assert button(clamped, ids.NEXT_PAGE) is None
    assert titles(clamped, "open") == _opens(5, 7)

    # The page shown is the one kept: the next decision redraws it, not an empty third.
    again = await _click(bot, ids.HOME_APPROVE, _decide_value(clamped, ids.HOME_APPROVE))
    assert titles(again, "named") == _names(18, 34)
    assert "Showing 18 to 33 of 33" in str(again)


async def test_a_home_place_that_is_not_one_redraws_the_first_pages(make_bot: Any) -> None:
    """A forged page button, or whatever the place stored for Alice holds (damaged, or a
    cursor past the end of her list): a redraw shows real pages, her first ones or the
    last of a list, and never fails."""
    bot: Harness = await make_bot()
    bot.slack.groups[ROTA] = [ALICE, BOB]
    bot.slack.channels_of[ALICE] = TEAMS
    await ask(bot, [*_decidable(25), *open_requests(0, 7)])
    home = await _both_on_page_two(bot)
    stale = _decide_value(home, ids.HOME_APPROVE).split(" ")[0] + " " + "0" * 64
    await turn_page(bot, ids.NEXT_PAGE, "x|y|z")  # a page button's value, forged
    refused = await _click(bot, ids.HOME_APPROVE, stale)
    assert titles(refused, "named") == _names(0, 17)
    assert titles(refused, "open") == _opens(0, 5)

    await _both_on_page_two(bot)
    for damaged in ["x|y|z", "abc|12 ../../other", "|", "\x00|\x00", "é" * 600, "12|34"]:
        await _keep(bot, damaged)
        refused = await _click(bot, ids.HOME_APPROVE, stale)
        assert "arguments changed" in str(refused[0]), damaged
        assert titles(refused, "named") == _names(0, 17), damaged
        assert titles(refused, "open") == _opens(0, 5), damaged

    await _keep(bot, "99999999999999 zzz|99999999999999 zzz")
    approve = _decide_value(last_home(bot), ids.HOME_APPROVE)
    past_the_end = await _click(bot, ids.HOME_APPROVE, approve)
    assert titles(past_the_end, "named") == _names(8, 25)
    assert titles(past_the_end, "open") == _opens(2, 7)  # its last five


async def test_other_approvers_homes_are_redrawn_on_the_pages_they_were_on(
    make_bot: Any,
) -> None:
    """Bob may decide what Alice may: when she approves one from her first page, his Home
    is redrawn without it, on the second page he was reading."""
    bot: Harness = await make_bot()
    bot.slack.channels_of[ALICE] = TEAMS
    bot.slack.channels_of[BOB] = TEAMS
    shared = [{**request, "approvers": [ALICE, BOB]} for request in _decidable(25)]
    await ask(bot, [*shared, *open_requests(0, 7)])
    bobs = await _both_on_page_two(bot, BOB)
    assert titles(bobs, "named") == _names(17, 25)
    alices = await open_home(bot)

    published = len(bot.slack.called("views.publish"))
    await _click(bot, ids.HOME_APPROVE, _decide_value(alices, ids.HOME_APPROVE))
    await bot.slack.wait_for(
        lambda: BOB in {c["user_id"] for c in bot.slack.called("views.publish")[published:]},
        what="Bob's Home redrawn",
    )
    bobs = last_home(bot, BOB)
    assert titles(bobs, "named") == _names(17, 25)
    assert "Showing 17 to 24 of 24" in str(bobs)
    assert titles(bobs, "open") == _opens(5, 7)


async def _keep(bot: Harness, place: str) -> None:
    """Store ``place`` as where Alice's Home lists start, as a redraw would."""
    await bot.services.storage.home.drawn(ALICE, bot.clock.now(), place=place, seen_in=())
