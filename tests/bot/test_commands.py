"""``/signoff``, mentions of the bot and the App Home tab, over signed HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import click_payload, event_body, sign
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from agent_runtime import Agent
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.slack.events import EVENTS_PATH
from bot.ui import ids
from bot.ui.refusals import STORAGE_DOWN
from storage.errors import StorageUnavailableError


def _mention(text: str, *, ts: str) -> dict[str, Any]:
    """An ``app_mention`` event from Carol in CHANNEL, as Slack sends it."""
    return {
        "type": "app_mention",
        "user": CAROL,
        "text": text,
        "ts": ts,
        "channel": CHANNEL,
        "event_ts": ts,
    }


def _buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b["accessory"] for b in blocks if b.get("accessory", {}).get("type") == "button"]


async def test_signoff_alone_lists_what_waits_for_the_caller_with_buttons(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)

    answer = await bot.command("", user=ALICE)
    assert answer["text"] == "1 waiting for you"
    assert answer["blocks"][0]["text"]["text"] == "Waiting for you: 1"
    [button] = _buttons(answer["blocks"])
    assert button["action_id"] == ids.OPEN_PENDING and button["value"] == bot.record_id(value)
    # The card's link, built from the workspace's URL as Slack shapes it.
    assert bot.slack.called("chat.getPermalink") == []
    ts = bot.message_ts().replace(".", "")
    assert button["url"] == f"https://fake.slack.test/archives/{CHANNEL}/p{ts}"

    nothing = await bot.command("", user=MALLORY)
    assert nothing["text"] == "0 waiting for you" and _buttons(nothing["blocks"]) == []


async def test_signoff_tells_a_voter_their_approval_counts_toward_the_quorum(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")

    alices = await bot.command("", user=ALICE)
    assert "Your approval is counted (1 of 2); a denial still ends it." in str(alices["blocks"])
    bobs = await bot.command("", user=BOB)
    assert bobs["text"] == "1 waiting for you" and "counted" not in str(bobs["blocks"])
    assert "1 of 2 approvals so far" in str(bobs["blocks"])  # as the card says


async def test_signoff_says_a_request_is_a_dangerous_action_as_its_card_does(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,), dangerous=True))
    await bot.start(requested_by=CAROL)
    assert ":warning: Dangerous action" in str(bot.posted(0)["blocks"])
    assert ":warning: Dangerous action" in str((await bot.command("", user=ALICE))["blocks"])


async def test_a_voter_is_not_told_a_denial_ends_a_quorum_that_offers_none(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2, decisions=("approve",))
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")

    said = str((await bot.command("", user=ALICE))["blocks"])
    assert "Your approval is counted (1 of 2)." in said, said
    assert "denial" not in said


async def test_signoff_help_explains_the_commands(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    answer = await bot.command("help", user=ALICE)
    assert "/signoff run <agent> <input>" in answer["text"]
    assert bot.slack.called("chat.postMessage") == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("bogus <b>", "`/signoff bogus &lt;b&gt;` is not a Signoff command."),
        ("run", "Name the agent to run: `/signoff run <agent> <input>` (known: `cleanup`)."),
    ],
)
async def test_an_unknown_command_gets_the_usage_not_the_pending_list(
    make_bot: Any, text: str, says: str
) -> None:
    bot: Harness = await make_bot()
    answer = await bot.command(text, user=ALICE)
    assert answer["text"].startswith(says)
    assert "blocks" not in answer  # not the list of pending requests
    assert bot.slack.called("chat.postMessage") == []


async def test_signoff_run_starts_a_run_and_posts_its_interrupt(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    answer = await bot.command("run cleanup tidy the disk", user=CAROL)
    assert answer["text"].startswith("Starting cleanup")
    await bot.slack.wait_calls("chat.postMessage")
    post = bot.posted()
    assert post["channel"] == CHANNEL and f"<@{CAROL}>" in str(post["blocks"])
    model = bot.services.registry.agent("cleanup").model  # type: ignore[attr-defined]
    assert model.requests[0].messages[0].content == "tidy the disk"


async def test_a_run_whose_cards_go_where_it_runs_is_not_started_in_a_direct_message(
    make_bot: Any,
) -> None:
    """Its card would be seen by the requester alone."""
    bot: Harness = await make_bot(Policy(users=(ALICE, BOB)))  # names no channel
    await bot.command("run cleanup tidy the disk", user=CAROL, channel="D0CAROL")
    await bot.slack.wait_for(lambda: len(bot.slack.called("chat.postMessage")) == 1)
    [said] = bot.slack.called("chat.postMessage")
    assert said["channel"] == "D0CAROL" and said["text"].startswith(
        "Run cleanup in a channel its approvers are in"
    )
    assert await bot.services.storage.queries.pending_count() == 0


async def test_signoff_run_with_an_unknown_agent_answers_only_the_caller(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    answer = await bot.command("run nope tidy", user=CAROL)
    assert answer["text"] == "no agent named 'nope' (known: cleanup)"
    assert answer.get("response_type", "ephemeral") == "ephemeral"
    await bot.services.background.idle()
    assert bot.slack.called("chat.postMessage") == []


def _no_api_key(store: SessionStore) -> Agent:
    raise ValueError("no API key")


async def test_signoff_run_of_an_agent_that_cannot_be_built_names_it_in_the_thread(
    make_bot: Any,
) -> None:
    """Its build raises: the thread says which agent and what type of error, not the
    error's own message (the log has it)."""
    spec = AgentSpec(name="cleanup", build=_no_api_key, policy=Policy(users=(ALICE,)))
    bot: Harness = await make_bot(spec=spec)
    await bot.command("run cleanup tidy the disk", user=CAROL)
    await bot.slack.wait_for(lambda: len(bot.slack.called("chat.postMessage")) == 1)
    [said] = bot.slack.called("chat.postMessage")
    assert said["text"] == (
        "The run of cleanup failed (agent 'cleanup': build() raised ValueError); "
        f"see the bot's log.\ncc <@{CAROL}>"
    )


async def test_only_the_listed_starters_may_start_an_agent(make_bot: Any) -> None:
    bot: Harness = await make_bot(started_by=(CAROL,))
    refused = await bot.command("run cleanup tidy", user=MALLORY)
    assert refused["text"] == f"You may not start cleanup; it can be started by <@{CAROL}>."
    allowed = await bot.command("run cleanup tidy", user=CAROL)
    assert allowed["text"].startswith("Starting cleanup")
    await bot.slack.wait_calls("chat.postMessage")
    assert f"<@{CAROL}>" in str(bot.posted()["blocks"])
    assert len(bot.slack.called("chat.postMessage")) == 1


async def test_starters_named_by_group_are_checked_after_the_ack(make_bot: Any) -> None:
    bot: Harness = await make_bot(started_by=("S0STARTERS",))
    bot.slack.groups["S0STARTERS"] = [CAROL]
    answer = await bot.command("run cleanup tidy", user=MALLORY)
    assert answer["text"].startswith("Starting cleanup")  # no Slack call before the ack
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == MALLORY and "You may not start cleanup" in refusal["text"]
    assert bot.slack.called("chat.postMessage") == []
    await bot.command("run cleanup tidy", user=CAROL)
    await bot.slack.wait_calls("chat.postMessage")
    assert f"<@{CAROL}>" in str(bot.posted()["blocks"])


async def test_a_mention_starts_a_run_in_the_mentions_thread(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    mention = _mention("<@UBOT0001> run cleanup tidy", ts="1700000000.000200")
    await bot.event(mention)
    await bot.slack.wait_calls("chat.postMessage")
    post = bot.posted()
    assert post["channel"] == CHANNEL and post["thread_ts"] == mention["ts"]
    assert f"<@{CAROL}>" in str(post["blocks"])

    value = post["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.slack.wait_for(
        lambda: any(
            str(p.get("text", "")).startswith("Finished") and p.get("thread_ts") == mention["ts"]
            for p in bot.slack.called("chat.postMessage")
        ),
        what="the result in the mention's thread",
    )
    assert len(bot.tool_log.calls) == 1


async def test_a_mention_without_run_tells_only_its_author_how_to_start_one(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    await bot.event(_mention("<@UBOT0001> help", ts="1700000000.000250"), event_id="Ev0HELP")
    await bot.event(
        _mention("<@UBOT0001> help", ts="1700000000.000250"), event_id="Ev0HELP", retry=1
    )
    await bot.services.background.idle()
    [told] = bot.slack.called("chat.postEphemeral")
    assert (told["user"], told["channel"]) == (CAROL, CHANNEL)
    assert told["text"] == (
        "To start a run, mention me with `run <agent> <input>` (agents: `cleanup`); "
        "`/signoff help` shows the rest."
    )
    assert bot.slack.called("chat.postMessage") == []  # nothing started, nothing posted


@pytest.mark.parametrize("text", ["<@UBOT0001> help", "<@UBOT0001> run cleanup tidy"])
async def test_a_mention_with_a_malformed_event_id_is_refused_and_does_nothing(
    make_bot: Any, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack's event ids are short and plain; one that is not is a forged or broken body,
    refused before any work (no background task failing on it later)."""
    bot: Harness = await make_bot()
    body = event_body(_mention(text, ts="1700000000.000260"), event_id="'\x99@ \u00cc")
    headers = {**sign(body), "Content-Type": "application/json"}
    async with bot.http.post(bot.url + EVENTS_PATH, data=body.encode(), headers=headers) as r:
        assert r.status == 400
    await bot.services.background.idle()
    assert [r for r in caplog.records if r.name == "bot.services.background"] == []
    assert bot.slack.calls == []


async def test_a_retried_mention_never_starts_a_second_run(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    mention = _mention("<@UBOT0001> run cleanup tidy", ts="1700000000.000300")
    await bot.event(mention, event_id="Ev0RETRIED")
    await bot.event(mention, event_id="Ev0RETRIED", retry=1)
    await bot.event(mention, event_id="Ev0RETRIED", retry=2)
    await bot.services.background.idle()

    [post] = bot.slack.called("chat.postMessage")
    assert post["thread_ts"] == mention["ts"]
    model = bot.services.registry.agent("cleanup").model  # type: ignore[attr-defined]
    assert len(model.requests) == 1


async def test_app_home_shows_the_same_list_and_lets_you_decide_there(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    listed = await bot.command("", user=ALICE)

    await bot.event({"type": "app_home_opened", "user": ALICE, "channel": "D0HOME", "tab": "home"})
    await bot.slack.wait_calls("views.publish")
    [publish] = bot.slack.called("views.publish")
    assert publish["user_id"] == ALICE
    assert publish["view"]["type"] == "home"
    home = publish["view"]["blocks"]
    # The same entries as the command's list, each followed by its arguments and buttons.
    assert [b for b in home if b in listed["blocks"]] == listed["blocks"]
    assert _buttons(home)[0]["value"] == bot.record_id(value)
    decide = [e["action_id"] for b in home if b["type"] == "actions" for e in b["elements"]]
    assert decide == [ids.HOME_APPROVE, ids.HOME_DENY]


async def test_a_long_list_comes_a_page_at_a_time_within_slacks_block_limits(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    for _ in range(30):
        await bot.start(requested_by=CAROL)

    answer = await bot.command("", user=ALICE)
    first = answer["blocks"]
    assert answer["text"] == "30 waiting for you" and len(first) <= 50
    assert len(_buttons(first)) == 23
    [next_page] = [e for b in first if b["type"] == "actions" for e in b["elements"]]
    assert next_page["action_id"] == ids.NEXT_PAGE

    payload = click_payload(
        action_id=ids.NEXT_PAGE,
        value=next_page["value"],
        user=ALICE,
        channel=CHANNEL,
        message_ts="1700000000.000100",
    )
    payload["response_url"] = bot.slack.response_url
    response = await bot.send(payload)
    assert response.status == 200
    await bot.slack.wait_calls("response_url")
    [page] = bot.slack.called("response_url")
    assert page["replace_original"] is True
    assert len(_buttons(page["blocks"])) == 7
    assert not any(b["type"] == "actions" for b in page["blocks"])
    shown = {b["value"] for b in _buttons(first) + _buttons(page["blocks"])}
    assert len(shown) == 30  # every request once, across the two pages


async def test_signoff_answers_while_slacks_web_api_fails(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    await bot.start(requested_by=CAROL)
    bot.slack.down = True  # every Web API method answers 502 (auth.test included)
    answer = await bot.command("", user=ALICE)
    assert answer["text"] == "1 waiting for you"


async def test_a_run_gets_its_input_as_the_person_typed_it(make_bot: Any) -> None:
    """Slack sends &, < and > as entities, and references with labels
    (https://api.slack.com/reference/surfaces/formatting#escaping)."""
    bot: Harness = await make_bot()
    mention = _mention(
        "<@UBOT0001> run cleanup files &gt; 30 days &amp; logs", ts="1700000000.000400"
    )
    await bot.event(mention)
    await bot.command(f"run cleanup tell <@{ALICE}|alice> &lt;now&gt;", user=CAROL)
    await bot.slack.wait_calls("chat.postMessage", 2)
    model = bot.services.registry.agent("cleanup").model  # type: ignore[attr-defined]
    prompts = sorted(str(r.messages[0].content) for r in model.requests)
    assert prompts == ["files > 30 days & logs", f"tell <@{ALICE}> <now>"]


async def test_a_mention_keeps_the_people_and_channels_its_input_names(make_bot: Any) -> None:
    """Only the mention of the bot that opens the message is dropped: someone named in the
    input (a colleague, a channel) reaches the run as typed. The event is Slack's documented
    ``app_mention`` from a Slack Connect channel (the author from another team), trimmed."""
    bot: Harness = await make_bot()
    mention = {
        **_mention(
            f"<@UBOT0001> run cleanup tidy <#C0OPS|ops> then tell <@{ALICE}>",
            ts="1700000000.000500",
        ),
        "client_msg_id": "3b0a6b4e-1c1a-4c61-9a6b-0d7f6c6e3a11",
        "team": "T0OTHER",
        "user_team": "T0OTHER",
        "source_team": "T0OTHER",
    }
    await bot.event(mention)
    await bot.slack.wait_calls("chat.postMessage")
    model = bot.services.registry.agent("cleanup").model  # type: ignore[attr-defined]
    assert model.requests[0].messages[0].content == f"tidy <#C0OPS> then tell <@{ALICE}>"


async def test_a_mention_while_redis_is_down_tells_its_author_nothing_started(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Whether a delivery is Slack's retry is asked of Redis; when it cannot say, the
    author is told nothing started (Slack got its ack, so it sends the event no more). A
    hint on how to start a run needs no storage: it is given."""
    bot: Harness = await make_bot()

    async def down(event_id: str) -> bool:
        raise StorageUnavailableError("Redis refused the connection")

    bot.services.storage.deliveries.first = down  # type: ignore[method-assign]
    await bot.event(_mention("<@UBOT0001> run cleanup tidy", ts="1700000000.000600"))
    await bot.event(_mention("<@UBOT0001> help", ts="1700000000.000610"))
    await bot.services.background.idle()
    told = sorted(
        (e["user"], e["channel"], e["text"]) for e in bot.slack.called("chat.postEphemeral")
    )
    assert [t[:2] for t in told] == [(CAROL, CHANNEL)] * 2
    assert told[0][2] == STORAGE_DOWN and told[1][2].startswith("To start a run, mention me")
    assert bot.slack.called("chat.postMessage") == []
    assert [r for r in caplog.records if r.name == "bot.services.background"] == []
