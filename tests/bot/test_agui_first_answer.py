"""An AG-UI interrupt is a card in Slack too: the first answer wins, in the app or on the
card, and the other surface says who answered first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from agui_endpoint import Endpoint, answer_one, ask_one, run_client
from batch_agents import spec as deletions
from harness import ALICE, BOB, CHANNEL

from bot.agents.policy import Policy
from bot.ui import ids


async def test_the_app_answers_first_and_the_card_says_it_was_decided_in_the_app(
    endpoint: Endpoint,
) -> None:
    bot = endpoint.bot
    _, second = await run_client(
        endpoint.url,
        "thread-app-first",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert second["finished"]["outcome"] == {"type": "success"}
    # The interrupt was also a card in the policy's channel; the app's answer decided it.
    card = bot.posted(0)
    assert card["channel"] == CHANNEL and "delete_files" in card["text"]
    await bot.slack.wait_for(
        lambda: any(
            "decided in the app" in str(u["blocks"]) for u in bot.slack.called("chat.update")
        ),
        what="the card decided in the app",
    )
    value = card["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)  # too late: nothing more happens
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "in the app" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]  # once: no resume job
    trail = await bot.services.storage.audit.read(count=100)
    assert [e.event for e in trail if e.event == "decided_in_app"] == ["decided_in_app"]


async def test_a_slack_click_first_and_the_apps_late_answer_gets_a_run_error(
    endpoint: Endpoint,
) -> None:
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-slack-first", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()  # the resume worker ran the rest
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    [late] = await run_client(endpoint.url, "thread-slack-first", [{"resume": [answer]}])
    assert late["finished"] is None and late["error"]["code"] == "decided_elsewhere"
    assert f"approved in Slack by {ALICE}" in late["error"]["message"]
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_an_apps_answer_while_a_click_waits_out_its_undo_window_names_the_click(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), undo_window=timedelta(seconds=30))
    endpoint = await endpoint_for(policy)
    bot = endpoint.bot
    interrupt, rid = await ask_one(endpoint, "thread-held")
    await bot.click(ids.APPROVE, bot.posted(0)["blocks"][-1]["elements"][0]["value"], user=ALICE)
    await bot.slack.wait_calls("chat.update")  # the card shows the approval it holds
    denial = {"interruptId": interrupt["id"], "status": "cancelled"}
    [late] = await run_client(endpoint.url, "thread-held", [{"resume": [denial]}])
    assert late["error"]["code"] == "decided_elsewhere", late
    assert f"already approved in Slack by {ALICE} (final at " in late["error"]["message"]
    record = await bot.services.storage.queries.get(rid)
    assert record is not None and record.held is not None and record.held.by == ALICE
    assert bot.tool_log.calls == []


async def test_a_late_app_answer_to_a_quorum_names_everyone_who_approved(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    bot = endpoint.bot
    interrupt, _ = await ask_one(endpoint, "thread-quorum")
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.finished()
    late = await answer_one(
        endpoint, "thread-quorum", interrupt["id"], status="resolved", payload={"type": "approve"}
    )
    assert late["error"]["code"] == "decided_elsewhere"
    assert f"approved in Slack by {ALICE}, {BOB}" in late["error"]["message"]


async def test_a_click_between_the_apps_answers_loses_none_of_them(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app answers cards A and B; a click decides B after the app decided A. The
    app's resume is refused, and the resume worker runs the run on with both."""
    deleted: list[str] = []
    endpoint = await endpoint_for(spec=deletions(deleted, ["/tmp/a", "/tmp/b"], batch=False))
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-race", [{"prompt": "clean up"}])
    interrupts = first["finished"]["outcome"]["interrupts"]
    await bot.slack.wait_calls("chat.postMessage", 2)
    card_a, card_b = (
        bot.record_id(bot.posted(0)["blocks"][-1]["elements"][0]["value"]),
        bot.posted(1),
    )
    store = bot.services.storage.interrupts
    decide_in_app = store.decide_in_app

    async def then_a_click_on_b(rid: str, *args: Any, **kwargs: Any) -> Any:
        outcome = await decide_in_app(rid, *args, **kwargs)
        if rid == card_a:
            ts_b = bot.slack.answers("chat.postMessage")[1]["ts"]
            value_b = card_b["blocks"][-1]["elements"][0]["value"]
            await bot.click(ids.APPROVE, value_b, user=ALICE, message_ts=ts_b)
            await bot.slack.wait_for(
                lambda: any(u["ts"] == ts_b for u in bot.slack.called("chat.update")),
                what="card B decided by the click",
            )
        return outcome

    store.decide_in_app = then_a_click_on_b  # type: ignore[method-assign,assignment]
    answers = [
        {"interruptId": i["id"], "status": "resolved", "payload": {"type": "approve"}}
        for i in interrupts
    ]
    [seen] = await run_client(endpoint.url, "thread-race", [{"resume": answers}])
    assert seen["finished"] is None and seen["error"]["code"] == "decided_elsewhere"
    assert "your answers to" in seen["error"]["message"], seen["error"]
    await bot.slack.wait_for(lambda: sorted(deleted) == ["/tmp/a", "/tmp/b"], what="both calls")
    record = await bot.services.storage.queries.get(card_a)
    assert record is not None and record.state == "approved" and record.decided_by == "app"


async def test_a_card_decided_in_slack_goes_on_with_the_apps_answers_to_the_others(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """Cards A and B: A is approved in Slack. The app's answer to A is refused, saying to
    answer the rest; its answer to B alone runs the run on with both, once."""
    deleted: list[str] = []
    endpoint = await endpoint_for(spec=deletions(deleted, ["/tmp/a", "/tmp/b"], batch=False))
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-mixed", [{"prompt": "clean up"}])
    interrupts = first["finished"]["outcome"]["interrupts"]
    await bot.slack.wait_calls("chat.postMessage", 2)
    value_a = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value_a, user=ALICE)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == bot.message_ts(0) for u in bot.slack.called("chat.update")),
        what="card A approved in Slack",
    )
    card_a = await bot.services.storage.queries.get(bot.record_id(value_a))
    assert card_a is not None and card_a.state == "approved"
    a, b = sorted(interrupts, key=lambda i: i["id"] != card_a.runtime_interrupt.id)
    deny_b = {"interruptId": b["id"], "status": "resolved", "payload": {"type": "reject"}}
    both = [{"interruptId": a["id"], "status": "resolved", "payload": {"type": "reject"}}, deny_b]
    [refused] = await run_client(endpoint.url, "thread-mixed", [{"resume": both}])
    assert refused["error"]["code"] == "decided_elsewhere", refused
    assert f"approved in Slack by {ALICE}" in refused["error"]["message"]
    assert "answer the thread's other interrupts without it" in refused["error"]["message"]
    [seen] = await run_client(endpoint.url, "thread-mixed", [{"resume": [deny_b]}])
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}, seen
    call_a = card_a.runtime_interrupt.tool_call
    assert call_a is not None and deleted == [call_a.args["path"]]
    card_b = await bot.services.storage.queries.get(
        bot.record_id(bot.posted(1)["blocks"][-1]["elements"][0]["value"])
    )
    assert card_b is not None and card_b.state == "denied" and card_b.decided_by == "app"
    storage = bot.services.storage
    streams = [storage.keys.resume_stream(shard) for shard in storage.keys.all_shards]
    assert [await storage.client.raw.xlen(s) for s in streams] == [0] * len(streams)  # no job


@pytest.mark.parametrize("first", ["app", "slack"])
async def test_an_app_sending_its_approval_twice_while_alice_clicks_runs_the_tool_once(
    endpoint: Endpoint, first: str
) -> None:
    """Two real clients send the app's approval at once, and Alice clicks Approve on the
    card as the first of them reaches the bot (her click decided just before it, or just
    after): one answer wins, the tool runs once, and every loser is told clearly."""
    bot = endpoint.bot
    [asked] = await run_client(endpoint.url, "thread-all-at-once", [{"prompt": "clean up"}])
    [interrupt] = asked["finished"]["outcome"]["interrupts"]
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    record_id = bot.record_id(value)
    store = bot.services.storage.interrupts
    decide_in_app = store.decide_in_app
    clicked: list[int] = []

    def card_decided() -> bool:
        return any(ALICE in str(u["blocks"]) for u in bot.slack.called("chat.update"))

    async def click() -> None:
        assert (await bot.click(ids.APPROVE, value, user=ALICE)).status == 200

    async def alice_clicks_meanwhile(*args: Any, **kwargs: Any) -> Any:
        if not clicked:
            clicked.append(1)
            if first == "app":
                outcome = await decide_in_app(*args, **kwargs)
                await click()
                return outcome
            await click()
        if first == "slack":  # each app answer reaches storage after her click is decided
            await bot.slack.wait_for(card_decided, what="the card decided by Alice's click")
        return await decide_in_app(*args, **kwargs)

    store.decide_in_app = alice_clicks_meanwhile  # type: ignore[method-assign]
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    apps = [
        seen
        for [seen] in await asyncio.gather(
            run_client(endpoint.url, "thread-all-at-once", [{"resume": [approve]}]),
            run_client(endpoint.url, "thread-all-at-once", [{"resume": [approve]}]),
        )
    ]
    assert clicked == [1]
    won = [a["finished"]["outcome"] for a in apps if a["finished"] is not None]
    lost = [a["error"] for a in apps if a["finished"] is None]
    if first == "app":  # one app answer ran the tool; the click is told, and the other
        # answer, the same sent again, hears the round's end, or that it still runs
        assert {"type": "success"} in won and all(o == {"type": "success"} for o in won), apps
        assert len(won) + len(lost) == 2, apps
        assert all("already approved in the app" in e["message"] for e in lost), apps
        await bot.slack.wait_calls("chat.postEphemeral")
        assert "in the app" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    else:  # the click won: the app answers are told so (one may instead find the thread
        # held by the other, as it takes its answer), and the worker runs the tool
        assert won == [] and len(lost) == 2, apps
        told = [e for e in lost if e["code"] == "decided_elsewhere"]
        assert told and all(e["code"] == "round_running" for e in lost if e not in told), apps
        assert all(f"approved in Slack by {ALICE}" in e["message"] for e in told)
        await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    record = await bot.services.storage.queries.get(record_id)
    assert record is not None and record.state == "approved"
    assert record.decided_by == ("app" if first == "app" else ALICE)
