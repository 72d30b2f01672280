"""App Home for someone on many teams' rotas: everything they may decide, in however many
channels, a page at a time, saying how much it shows; and opening it stays cheap."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fakes import Fault
from harness import ALICE, BOB, Harness
from home_lists import (
    QUIET,
    ROTA,
    TEAMS,
    ask,
    button,
    named_requests,
    open_home,
    open_requests,
    titles,
    turn_page,
)
from redis.asyncio.connection import AbstractConnection

from bot.ui import ids


@contextmanager
def _round_trips(task_name: str) -> Iterator[list[int]]:
    """Counts the requests sent to Redis (a pipeline is one) by the task ``task_name``."""
    sent = [0]
    original = AbstractConnection.send_packed_command

    async def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        task = asyncio.current_task()
        if task is not None and task.get_name() == task_name:
            sent[0] += 1
        await original(self, command, check_health)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AbstractConnection, "send_packed_command", counted)
        yield sent


async def test_home_pages_through_every_request_in_more_than_twenty_channels_saying_how_many(
    make_bot: Any,
) -> None:
    """25 team channels wait on requests that name Alice or her rota, and 10 others on
    requests open to anyone in them: Home lists every one, a page at a time, counted."""
    bot: Harness = await make_bot()
    bot.slack.groups[ROTA] = [ALICE, BOB]
    bot.slack.channels_of[ALICE] = [*QUIET, *TEAMS]
    await ask(bot, [*named_requests(0, 25), *open_requests(25, 10)])

    home = await open_home(bot)
    assert len(home) <= 100
    assert "Showing 1 to 17 of 25, oldest first" in str(home)
    assert "Open to everyone in your channels: 10" in str(home)
    assert "Showing 1 to 5 of 10, oldest first" in str(home)
    named, opened = titles(home, "named"), titles(home, "open")
    assert named == [f"named {n:02d}" for n in range(17)]
    assert opened == [f"open {n:02d}" for n in range(25, 30)]

    next_page = button(home, ids.NEXT_PAGE)
    assert next_page is not None
    rest = await turn_page(bot, ids.NEXT_PAGE, next_page["value"])
    assert "Showing 18 to 25 of 25, oldest first" in str(rest)
    named += titles(rest, "named")
    assert button(rest, ids.NEXT_PAGE) is None

    more = button(home, ids.HOME_OPEN_PAGE)
    assert more is not None
    rest = await turn_page(bot, ids.HOME_OPEN_PAGE, more["value"])
    assert "Showing 6 to 10 of 10, oldest first" in str(rest)
    opened += titles(rest, "open")
    assert button(rest, ids.HOME_OPEN_PAGE) is None

    assert named == [f"named {n:02d}" for n in range(25)]
    assert opened == [f"open {n:02d}" for n in range(25, 35)]


async def test_opening_home_costs_the_same_however_many_requests_wait(make_bot: Any) -> None:
    """One ``views.publish``, Slack's list of her channels once in five minutes, and seven
    requests to Redis (note the view, two per list, the trust grants, note the channels
    whose requests it lists), with 10 requests waiting or 40."""
    bot: Harness = await make_bot()
    bot.slack.channels_of[ALICE] = [*QUIET, *TEAMS]
    await ask(bot, [*named_requests(1, 5), *open_requests(20, 5)])
    task = f"home {ALICE}"

    calls = len(bot.slack.calls)
    with _round_trips(task) as sent:
        await open_home(bot)
    asked = [c.method for c in bot.slack.calls[calls:]]
    assert sorted(asked) == ["users.conversations"] * 2 + ["views.publish"]  # 240 channels
    assert sent == [7]

    await ask(bot, [*named_requests(6, 14), *open_requests(25, 15)], job="later-job")
    calls = len(bot.slack.calls)
    with _round_trips(task) as sent:
        home = await open_home(bot)
    assert [c.method for c in bot.slack.calls[calls:]] == ["views.publish"]
    assert sent == [7]
    assert "of 19, oldest first" in str(home) and "of 20, oldest first" in str(home)


async def test_home_says_when_it_looked_in_only_some_of_the_viewers_channels(
    make_bot: Any,
) -> None:
    """Slack lists 200 channels a page and Home asks for five pages: someone in more
    channels is told which were looked in, not left to think there is nothing else."""
    bot: Harness = await make_bot()
    bot.slack.channels_of[ALICE] = [*TEAMS, *(f"C0MANY{n:04d}" for n in range(1000))]
    await ask(bot, open_requests(0, 1))
    home = await open_home(bot)
    assert "open 00" in str(home)
    assert "Looked in the first 1,000 of your channels Slack lists, not the rest." in str(home)


async def test_home_says_so_when_slack_would_not_list_the_viewers_channels(
    make_bot: Any,
) -> None:
    """Without ``channels:read`` Slack lists no channel: Home says where those requests are
    rather than showing an empty list as if nothing waited there."""
    bot: Harness = await make_bot()
    bot.slack.channels_of[ALICE] = TEAMS
    bot.slack.faults["users.conversations"].append(
        Fault(status=200, body={"ok": False, "error": "missing_scope"})
    )
    await ask(bot, open_requests(0, 1))
    home = await open_home(bot)
    assert "open 00" not in str(home)
    assert "Slack did not list your channels" in str(home)


async def test_paging_one_home_list_keeps_the_other_on_its_page(make_bot: Any) -> None:
    """Each page button carries where both lists are: the next page of one leaves the other
    where it was, and a value that is not a place starts both from their first page."""
    bot: Harness = await make_bot()
    bot.slack.groups[ROTA] = [ALICE, BOB]
    bot.slack.channels_of[ALICE] = TEAMS
    await ask(bot, [*named_requests(0, 25), *open_requests(25, 10)])
    home = await open_home(bot)

    next_page = button(home, ids.NEXT_PAGE)
    assert next_page is not None
    named_later = await turn_page(bot, ids.NEXT_PAGE, next_page["value"])
    assert titles(named_later, "named") == [f"named {n:02d}" for n in range(17, 25)]
    more = button(named_later, ids.HOME_OPEN_PAGE)
    assert more is not None
    both_later = await turn_page(bot, ids.HOME_OPEN_PAGE, more["value"])
    assert titles(both_later, "named") == [f"named {n:02d}" for n in range(17, 25)]
    assert titles(both_later, "open") == [f"open {n:02d}" for n in range(30, 35)]
    assert "Showing 18 to 25 of 25" in str(both_later)
    assert "Showing 6 to 10 of 10" in str(both_later)

    # Back the other way: the open list's second page kept while the named list pages.
    more = button(home, ids.HOME_OPEN_PAGE)
    assert more is not None
    open_later = await turn_page(bot, ids.HOME_OPEN_PAGE, more["value"])
    next_page = button(open_later, ids.NEXT_PAGE)
    assert next_page is not None
    both_later = await turn_page(bot, ids.NEXT_PAGE, next_page["value"])
    assert titles(both_later, "open") == [f"open {n:02d}" for n in range(30, 35)]
    assert titles(both_later, "named") == [f"named {n:02d}" for n in range(17, 25)]

    for forged in ["not a cursor", "x|y|z", "abc|12 ../../other", ""]:
        first = await turn_page(bot, ids.NEXT_PAGE, forged)
        assert titles(first, "named") == [f"named {n:02d}" for n in range(17)], forged
        assert titles(first, "open") == [f"open {n:02d}" for n in range(25, 30)], forged
