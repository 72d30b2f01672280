"""Trust that matters: "Approve and trust this tool for 60 min" covers later runs of the
same agent's tool in the same channel, says so on every card, is audited, listed in App
Home and revocable there."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import OneToolModel, home_click_payload
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness
from trust_runs import (
    approved_without_a_click,
    held_cards,
    posted_cards,
    start_cleanup,
    trust_held,
    trust_policy,
)

from agent_runtime import Agent, ToolCall, tool
from agent_runtime.interrupts import Remember
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.decisions.clicks import made_final
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

OTHER = "C0DEV"


async def test_a_trust_covers_later_runs_in_the_channel_until_it_ends(make_bot: Any) -> None:
    bot: Harness = await make_bot(trust_policy())
    card = await start_cleanup(bot)
    trust = [e for e in card["blocks"][-1]["elements"] if e.get("action_id") == ids.TRUST]
    assert [e["text"]["text"] for e in trust] == ["Approve and trust this tool for 60 min"]
    await bot.click(ids.TRUST, trust[0]["value"], user=ALICE)
    await approved_without_a_click(bot, 1)
    await bot.clicks_done()  # the card drawn by the click decider, not the resumed run
    granted = bot.slack.called("chat.update")[-1]
    assert "Trusted until" in str(granted["blocks"]) and "with any arguments" in str(
        granted["blocks"]
    )
    trail = await bot.services.storage.audit.read(count=100)
    [entry] = [e for e in trail if e.event == "trust_granted"]
    assert entry.user_id == ALICE and "cleanup/delete_files in C0OPS" in entry.detail

    # A later run (its own thread) in the same channel: approved in Alice's name, no click.
    second = await start_cleanup(bot)
    assert second["channel"] == CHANNEL
    await approved_without_a_click(bot, 2)
    await bot.slack.wait_for(
        lambda: (
            "Approved under the trust <@U0ALICE> gave" in str(bot.slack.called("chat.update")[-1])
        ),
        what="the card saying it ran under Alice's trust",
    )
    # Nobody clicked it: the card does not say Alice approved it then.
    [status, *_] = bot.slack.called("chat.update")[-1]["blocks"][-1]["elements"]
    assert status["text"].startswith(":white_check_mark: Approved <!date^"), status

    # Another channel is asked again; so is this one once the hour is over.
    elsewhere = await start_cleanup(bot, channel=OTHER)
    assert elsewhere["channel"] == OTHER and "actions" in str(elsewhere["blocks"])
    bot.clock.advance(timedelta(minutes=61))
    later = await start_cleanup(bot)
    assert any(b["type"] == "actions" for b in later["blocks"])
    assert len(bot.tool_log.calls) == 2


async def test_trust_of_exact_arguments_does_not_cover_other_arguments(make_bot: Any) -> None:
    bot: Harness = await make_bot(trust_policy(same_args=True), then=({"paths": ["/tmp/c"]},))
    card = await start_cleanup(bot)
    value = card["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.TRUST, value, user=ALICE)
    # The run's next call has other arguments: a new card asks.
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) == 2, what="a second card")
    assert "/tmp/c" in str(posted_cards(bot)[1]["blocks"])
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_app_home_lists_the_trust_and_its_granter_revokes_it(make_bot: Any) -> None:
    bot: Harness = await make_bot(trust_policy())
    card = await start_cleanup(bot)
    await bot.click(ids.TRUST, card["blocks"][-1]["elements"][0]["value"], user=ALICE)
    await approved_without_a_click(bot, 1)
    await bot.clicks_done()  # the grant kept by the click decider, not the resumed run

    await bot.event({"type": "app_home_opened", "user": ALICE, "tab": "home"})
    await bot.slack.wait_calls("views.publish")
    home = bot.slack.called("views.publish")[-1]["view"]["blocks"]
    [revoke] = [
        b["accessory"] for b in home if b.get("accessory", {}).get("action_id") == ids.REVOKE_TRUST
    ]
    assert "`delete_files` of *cleanup* in <#C0OPS>" in str(home)

    await bot.send(
        home_click_payload(user=MALLORY, action_id=ids.REVOKE_TRUST, value=revoke["value"])
    )  # not hers: nothing changes
    await bot.send(
        home_click_payload(user=ALICE, action_id=ids.REVOKE_TRUST, value=revoke["value"])
    )
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("views.publish")) >= 3, what="Home redrawn after the revoke"
    )
    assert ids.REVOKE_TRUST not in str(bot.slack.called("views.publish")[-1]["view"])
    trail = await bot.services.storage.audit.read(count=100)
    assert [e.user_id for e in trail if e.event == "trust_revoked"] == [ALICE]
    # The card that gave it still reads "Trusted until": its thread says it ended early.
    await bot.slack.wait_for(
        lambda: any(t.startswith(f":unlock: <@{ALICE}> revoked this trust") for t in bot.thread()),
        what="the revocation in the granting card's thread",
    )
    [said] = [t for t in bot.thread() if t.startswith(":unlock:")]
    assert "`delete_files` of *cleanup* in this channel is asked again from now on." in said

    again = await start_cleanup(bot)
    assert any(b["type"] == "actions" for b in again["blocks"])
    assert len(bot.tool_log.calls) == 1


def _requester_told(bot: Harness) -> bool:
    """The requester's note of the decision, sent once the decider has kept any grant."""
    texts = [str(p.get("text")) for p in bot.slack.called("chat.postMessage")]
    return any(t.startswith(f"<@{CAROL}> :white_check_mark: Approved by") for t in texts)


async def test_a_quorum_card_offers_no_trust_and_a_forged_trust_click_is_a_plain_vote(
    make_bot: Any,
) -> None:
    """A quorum is asked every time: one person's trust must never approve a later call
    of the run (in the runtime) or a later run (in storage)."""
    bot: Harness = await make_bot(
        Policy(users=(ALICE, BOB), min_approvals=2, trust=Remember(scope="minutes", minutes=60))
    )
    card = await start_cleanup(bot)
    offered = [e["action_id"] for e in card["blocks"][-1]["elements"]]
    assert ids.APPROVE in offered and ids.TRUST not in offered
    value = card["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.TRUST, value, user=ALICE)  # forged: the card never showed it
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.slack.wait_for(lambda: _requester_told(bot), what="the quorum's decision")
    assert await bot.services.storage.trust.active(bot.clock.now()) == []
    record = await bot.services.storage.queries.get(value.split(" ")[0])
    assert record is not None and record.decision is not None
    assert record.decision.get("remember") is None

    later = await start_cleanup(bot)
    assert any(e["action_id"] == ids.APPROVE for e in later["blocks"][-1]["elements"])
    assert len(bot.tool_log.calls) == 1


async def test_an_admin_revokes_someone_elses_trust_and_the_audit_names_the_admin(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(trust_policy(), admins=(MALLORY,))
    card = await start_cleanup(bot)
    await bot.click(ids.TRUST, card["blocks"][-1]["elements"][1]["value"], user=ALICE)
    await bot.slack.wait_for(lambda: _requester_told(bot), what="Alice's decision")

    await bot.event({"type": "app_home_opened", "user": MALLORY, "tab": "home"})
    await bot.slack.wait_calls("views.publish")
    home = bot.slack.called("views.publish")[-1]["view"]["blocks"]
    [revoke] = [
        b["accessory"] for b in home if b.get("accessory", {}).get("action_id") == ids.REVOKE_TRUST
    ]
    await bot.send(
        home_click_payload(user=MALLORY, action_id=ids.REVOKE_TRUST, value=revoke["value"])
    )
    await bot.slack.wait_calls("views.publish", 2)
    assert ids.REVOKE_TRUST not in str(bot.slack.called("views.publish")[-1]["view"])
    assert await bot.services.storage.trust.active(bot.clock.now()) == []
    trail = await bot.services.storage.audit.read(count=100)
    [revoked] = [e for e in trail if e.event == "trust_revoked"]
    assert revoked.user_id == MALLORY and revoked.detail.startswith(revoke["value"])
    [granted] = [e for e in trail if e.event == "trust_granted"]
    assert granted.user_id == ALICE


async def test_a_later_call_of_the_same_run_is_covered_on_a_card_of_its_own(
    make_bot: Any,
) -> None:
    """The grant is storage's (checked, revocable), not a copy the run keeps: the run's
    second call is a card of its own, approved under the grant."""
    bot: Harness = await make_bot(trust_policy(), then=({"paths": ["/tmp/c"]},))
    card = await start_cleanup(bot)
    [value] = [e["value"] for e in card["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST]
    await bot.click(ids.TRUST, value, user=ALICE)
    await approved_without_a_click(bot, 2)
    assert len(posted_cards(bot)) == 2  # the second call was asked on a card too
    await bot.slack.wait_for(
        lambda: any(
            "Approved under the trust" in str(u["blocks"]) for u in bot.slack.called("chat.update")
        ),
        what="the second card approved under the grant",
    )


async def test_an_approval_under_trust_with_an_undo_window_is_shown_held_with_undo(
    make_bot: Any,
) -> None:
    window = timedelta(seconds=60)
    bot = await trust_held(make_bot, window)
    bot.clock.advance(window * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await approved_without_a_click(bot, 1)

    await start_cleanup(bot)  # a later run: approved under Alice's grant, held in its own window
    await bot.slack.wait_for(lambda: len(held_cards(bot)) == 2, what="the later card shown held")
    assert len(bot.tool_log.calls) == 1  # not yet: it may still be undone
    # Alice did not click it: the card says whose trust approved it, not that she did.
    held = bot.slack.called("chat.update")[-1]
    status = held["blocks"][-2]["elements"][0]["text"]
    assert status.startswith(":white_check_mark: Approved under the trust <@U0ALICE> gave: runs")

    # Bob undoes it: it was not Alice's decision, and nothing says it was.
    [undo] = [e["value"] for e in held["blocks"][-1]["elements"] if e["action_id"] == ids.UNDO]
    await bot.click(ids.UNDO, undo, user=BOB, message_ts=held["ts"])
    undone = f"<@{BOB}> undid the approval made under <@{ALICE}>'s trust"
    await bot.slack.wait_for(
        lambda: any(
            str(p.get("text", "")).startswith(undone) for p in bot.slack.called("chat.postMessage")
        ),
        what="the undo's note in the later run's thread",
    )
    reopened = str(bot.slack.called("chat.update")[-1]["blocks"])
    assert undone in reopened and "undid the decision of" not in reopened
    assert len(bot.tool_log.calls) == 1
    record = await bot.services.storage.queries.get(bot.record_id(undo))
    assert record is not None and record.undone is not None and record.undone.trust_grant


def _volume_cleanup(volumes: list[dict[str, Any]], deleted: list[list[str]]) -> AgentSpec:
    """An agent deleting volumes older than 90 days, whose card shows which (its
    precondition reads ``volumes`` as they are), under a trust of the same arguments."""

    def stale(call: ToolCall) -> list[dict[str, Any]]:
        return [dict(v) for v in volumes if v["days"] >= int(call.args["older_than_days"])]

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete the volumes older than this."""
        deleted.append([str(v["id"]) for v in volumes if int(v["days"]) >= older_than_days])
        return "deleted"

    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_volumes", {"older_than_days": 90}),
            tools=[delete_volumes],
            interrupt_on={"delete_volumes": {"precondition": stale}},
            session_store=sessions,
            name="cleanup",
        )

    trust = Remember(scope="minutes", minutes=60, same_args=True)
    policy = Policy(channel=CHANNEL, users=(ALICE,), trust=trust)
    return AgentSpec(name="cleanup", build=build, policy=policy)


async def test_a_trust_never_approves_the_card_asking_again_about_what_changed(
    make_bot: Any,
) -> None:
    """Trusting these arguments vouches for what the card showed them acting on: when that
    grew before the click, the card asking again is for a person."""
    volumes = [{"id": "vol-a", "days": 400}, {"id": "vol-b", "days": 200}]
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=_volume_cleanup(volumes, deleted))
    await bot.start()
    trust = next(e for e in bot.posted()["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST)
    volumes += [{"id": f"vol-new-{n}", "days": 95} for n in range(300)]  # while it waited
    await bot.click(ids.TRUST, trust["value"], user=ALICE)
    await bot.slack.wait_calls("chat.postMessage", 3)  # the "approved" note, the new card
    await bot.loops.stop()  # the worker that posted it is done with the run
    await bot.services.background.idle()  # the note, posted after the click, in either order
    _, asking = [p for p in bot.slack.called("chat.postMessage") if "blocks" in p]
    assert "Changed since it was approved" in str(asking["blocks"])
    value = asking["blocks"][-1]["elements"][0]["value"]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"
    assert deleted == []


async def test_trusting_these_arguments_covers_them_acting_on_what_the_card_showed(
    make_bot: Any,
) -> None:
    """The same arguments acting on more than the trusted card showed are asked again."""
    volumes = [{"id": "vol-a", "days": 400}, {"id": "vol-b", "days": 200}]
    bot: Harness = await make_bot(spec=_volume_cleanup(volumes, []))
    await bot.start()
    trust = next(e for e in bot.posted()["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST)
    await bot.click(ids.TRUST, trust["value"], user=ALICE)
    await bot.finished()
    await bot.clicks_done()  # the grant kept by the click decider, not the resumed run

    async def next_run() -> str:
        place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
        result = await start_run(bot.services, "cleanup", "clean up", place=place)
        [asked] = await bot.services.storage.queries.pending_for_run(result.run_id) or [None]
        return "asked" if asked is not None else "trusted"

    assert await next_run() == "trusted"  # the same arguments, acting on the same volumes
    volumes.append({"id": "vol-c", "days": 120})
    assert await next_run() == "asked"  # the same arguments, acting on one more
