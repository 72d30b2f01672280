"""Stale approvals through the real Bolt app: the card shows what the call will act on;
if that changed between the card and the approval (or an approver's edit acts on something
else), the call does not run, the approved card says so, and a new card asks again with
the difference."""

from __future__ import annotations

from typing import Any

from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime import Agent, SessionStore, ToolCall, tool
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids

VOL_A = {"id": "vol-a", "gb": 10, "days": 400}
VOL_B = {"id": "vol-b", "gb": 20, "days": 200}
VOL_C = {"id": "vol-c", "gb": 5, "days": 100}
VOL_NEW = {"id": "vol-new", "gb": 1, "days": 3}


def cleanup(volumes: list[dict[str, Any]], deleted: list[list[str]]) -> AgentSpec:
    def older(days: int) -> list[dict[str, Any]]:
        return [dict(v) for v in volumes if v["days"] >= days]

    def stale_volumes(call: ToolCall) -> list[dict[str, Any]]:
        return older(int(call.args["older_than_days"]))

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete the volumes older than this."""
        deleted.append([v["id"] for v in older(older_than_days)])
        return f"deleted {len(deleted[-1])} volume(s)"

    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_volumes", {"older_than_days": 90}),
            tools=[delete_volumes],
            interrupt_on={"delete_volumes": {"precondition": stale_volumes}},
            session_store=sessions,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


def _cards(bot: Harness) -> list[dict[str, Any]]:
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


async def test_unchanged_runs_once(make_bot: Any) -> None:
    volumes, deleted = [VOL_A, VOL_B], []
    bot: Harness = await make_bot(spec=cleanup(volumes, deleted))
    value = await bot.start(requested_by=CAROL)
    assert "*It will act on*" in str(bot.posted(0)["blocks"]) and "vol-b" in str(bot.posted(0))
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done: deleted 2 volume(s)")
    assert deleted == [["vol-a", "vol-b"]] and len(_cards(bot)) == 1


async def test_changed_is_not_run_but_asked_again_and_the_new_approval_runs(
    make_bot: Any,
) -> None:
    volumes, deleted = [VOL_A, VOL_B], []
    bot: Harness = await make_bot(spec=cleanup(volumes, deleted))
    value = await bot.start(requested_by=CAROL)
    volumes[:] = [VOL_A, VOL_C]  # the world moved on while the card waited
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="the card asking again")
    assert deleted == []

    again = _cards(bot)[1]
    text = str(again["blocks"])
    assert again["blocks"][0]["text"]["text"] == "Approval needed: delete_volumes"
    assert ":warning: *Changed since it was approved*" in text
    assert text.index("vol-c") < text.index("Removed") < text.index("vol-b")  # added, removed
    assert again["thread_ts"] == bot.message_ts(0)

    await bot.slack.wait_for(
        lambda: any(
            u["blocks"][0]["text"]["text"] == "Changed since it was approved: delete_volumes"
            for u in bot.slack.called("chat.update")
        ),
        what="the approved card saying it did not run",
    )
    old = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts(0)][-1]
    assert f"by <@{ALICE}>" in str(old["blocks"]) and "Not run" in str(old["blocks"])

    value_again = again["blocks"][-1]["elements"][0]["value"]
    posted = bot.slack.called("chat.postMessage")
    posts = zip(posted, bot.slack.answers("chat.postMessage"), strict=True)
    [again_ts] = [a["ts"] for p, a in posts if p is again]
    await bot.click(ids.APPROVE, value_again, user=ALICE, message_ts=again_ts)
    assert (await bot.finished()).startswith("Finished: done: deleted 2 volume(s)")
    assert deleted == [["vol-a", "vol-c"]]
    audit = await bot.services.storage.audit.read(count=100)
    assert [e.event for e in audit if e.event in ("approved", "changed")] == [
        "approved",
        "changed",
        "approved",
    ]


async def test_an_edit_that_widens_what_it_acts_on_is_asked_again_before_it_runs(
    make_bot: Any,
) -> None:
    volumes, deleted = [VOL_A, VOL_B, VOL_NEW], []
    bot: Harness = await make_bot(spec=cleanup(volumes, deleted))
    value = await bot.start(requested_by=CAROL)
    assert "vol-new" not in str(bot.posted(0)["blocks"])
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    status, body = await bot.submit_form(
        value,
        user=ALICE,
        values={"arg.older_than_days": {"type": "number_input", "value": "1"}},
    )
    assert status == 200 and "errors" not in body, body
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="the card asking again")
    assert deleted == []  # the card showed vol-a and vol-b; the edit would delete vol-new too

    again = _cards(bot)[1]
    text = str(again["blocks"])
    assert '"older_than_days": 1' in text and '"older_than_days": 90' not in text
    assert "vol-new" in text  # what the edited call acts on, added since the card
    assert ":warning: *Edited: not what the earlier card showed*" in text
    await bot.slack.wait_for(
        lambda: any(
            u["ts"] == bot.message_ts(0)
            and u["blocks"][0]["text"]["text"] == "Edited, so asked again: delete_volumes"
            and "Not run: the edited call acts on other items than this card showed"
            in str(u["blocks"])
            for u in bot.slack.called("chat.update")
        ),
        what="the edited card saying it did not run, and why",
    )

    value_again = again["blocks"][-1]["elements"][0]["value"]
    posted = bot.slack.called("chat.postMessage")
    posts = zip(posted, bot.slack.answers("chat.postMessage"), strict=True)
    [again_ts] = [a["ts"] for p, a in posts if p is again]
    await bot.click(ids.APPROVE, value_again, user=ALICE, message_ts=again_ts)
    assert (await bot.finished()).startswith("Finished: done: deleted 3 volume(s)")
    assert deleted == [["vol-a", "vol-b", "vol-new"]]


def _long_cleanup(volumes: list[str], deleted: list[list[str]]) -> AgentSpec:
    """The cleanup agent with a long description, a long note in its arguments, and what it
    acts on in long lines: each part fits its block, all of them together do not."""

    @tool
    def delete_volumes(older_than_days: int, note: str) -> str:
        """Delete the volumes older than this."""
        deleted.append(list(volumes))
        return f"deleted {len(volumes)} volume(s)"

    def build(sessions: SessionStore) -> Agent:
        rule = {"precondition": lambda _call: list(volumes), "description": "d" * 2900}
        return Agent(
            model=OneToolModel("delete_volumes", {"older_than_days": 90, "note": "n" * 2900}),
            tools=[delete_volumes],
            interrupt_on={"delete_volumes": rule},
            session_store=sessions,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def test_a_card_too_long_for_slack_is_posted_compact_decided_and_redrawn(
    make_bot: Any,
) -> None:
    """The card asked again shows five long parts (description, arguments, added, removed,
    what it acts on): Slack refuses it as too long in total, so it is posted compact, with
    Full details showing it whole; approved there, it runs and its decided card lands."""
    volumes = [f"vol-a{i:03} " + "a" * 50 for i in range(60)]
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=_long_cleanup(volumes, deleted))
    bot.slack.most_block_text = 10_000  # Slack's own total is undocumented: about 12,000
    value = await bot.start(requested_by=CAROL)
    volumes[:] = [f"vol-b{i:03} " + "b" * 50 for i in range(60)]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="the card asking again")
    assert [c.args["blocks"][0] for c in bot.slack.failed] == [_cards(bot)[1]["blocks"][0]]

    again = _cards(bot)[1]
    text = str(again["blocks"])
    assert "Cut to fit in Slack" in text and "Full details" in text and "vol-b000" in text
    posted = bot.slack.called("chat.postMessage")
    posts = zip(posted, bot.slack.answers("chat.postMessage"), strict=True)
    [again_ts] = [a["ts"] for p, a in posts if p is again]
    value_again = again["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.FULL_ARGS, value_again, user=ALICE, message_ts=again_ts)
    await bot.slack.wait_calls("views.open")
    [modal] = bot.slack.called("views.open")
    assert "d" * 2900 in str(modal["view"]) and "vol-b059" in str(modal["view"])

    await bot.click(ids.APPROVE, value_again, user=ALICE, message_ts=again_ts)
    assert (await bot.finished()).startswith("Finished: done: deleted 60 volume(s)")
    assert deleted == [volumes]
    await bot.slack.wait_for(
        lambda: any(
            u["ts"] == again_ts and u["blocks"][0]["text"]["text"] == "Approved: delete_volumes"
            for u in bot.slack.called("chat.update")
        ),
        what="the compact card drawn approved",
    )
    [drawn] = [u for u in bot.slack.called("chat.update") if u["ts"] == again_ts]
    assert ids.APPROVE not in str(drawn["blocks"]) and "Cut to fit in Slack" in str(drawn)
