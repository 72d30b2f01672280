"""An "Approve and trust" keeps the grant its card shows when Redis loses a reply, a decider
dies after deciding, or Redis fails to store the grant, and an approval under it runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, CAROL, Harness
from redis_faults import reply_lost_once
from trust_runs import approved_without_a_click, start_cleanup, trust_held, trust_policy

from bot.decisions import clicks
from bot.decisions.clicks import made_final
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import Storage
from storage.errors import StorageError, StorageTimeoutError


async def test_a_trusted_approval_whose_reply_redis_lost_still_runs_and_is_drawn(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(trust_policy())
    card = await start_cleanup(bot)
    await bot.click(ids.TRUST, card["blocks"][-1]["elements"][0]["value"], user=ALICE)
    await approved_without_a_click(bot, 1)
    await bot.clicks_done()  # the grant kept by the click decider, not the resumed run
    [grant] = await bot.services.storage.trust.active(bot.clock.now())
    with reply_lost_once(naming=grant.id) as lost:  # the later run's approval under it
        await start_cleanup(bot)
        await approved_without_a_click(bot, 2)
    assert lost == ["EVALSHA"]
    await bot.slack.wait_for(
        lambda: (
            "Approved under the trust <@U0ALICE> gave" in str(bot.slack.called("chat.update")[-1])
        ),
        what="the card saying it ran under Alice's trust",
    )
    # Nobody clicked it: the card does not say Alice approved it then.
    [status, *_] = bot.slack.called("chat.update")[-1]["blocks"][-1]["elements"]
    assert status["text"].startswith(":white_check_mark: Approved <!date^"), status
    # Alice's click and the approval under her trust, each counted once.
    assert bot.services.metrics.decisions == {"approved": 2}


async def test_a_trust_click_whose_decision_lost_its_reply_keeps_the_trust_its_card_shows(
    make_bot: Any,
) -> None:
    """Redis decided the click, then its reply was lost and the decision was sent again:
    the card says "Trusted until", and the trust is kept, so a later run is approved."""
    bot: Harness = await make_bot(trust_policy())
    card = await start_cleanup(bot)
    [trust] = [e for e in card["blocks"][-1]["elements"] if e.get("action_id") == ids.TRUST]
    with reply_lost_once(naming='"remember":{"scope"') as lost:
        await bot.click(ids.TRUST, trust["value"], user=ALICE)
        await approved_without_a_click(bot, 1)
    assert lost == ["EVALSHA"]
    await bot.slack.wait_for(
        lambda: "Trusted until" in str(bot.slack.called("chat.update")), what="the trust shown"
    )
    await start_cleanup(bot)
    await approved_without_a_click(bot, 2)


async def test_a_trust_click_taken_over_from_a_decider_that_died_after_deciding_is_finished_once(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decider died after storage recorded the "Approve and trust" click but before the
    grant was kept and the requester told: the decider that takes the click over keeps the
    grant the card shows and tells the requester, and a later replay does neither again."""
    bot: Harness = await make_bot(trust_policy(), deciders=0)
    card = await start_cleanup(bot)
    [trust] = [e for e in card["blocks"][-1]["elements"] if e.get("action_id") == ids.TRUST]
    await bot.click(ids.TRUST, trust["value"], user=ALICE)
    [entry] = await storage.clicks.claim("dead-decider", count=10)

    async def died(*_: Any) -> None:
        raise RuntimeError("the decider's process died")

    monkeypatch.setattr(clicks, "keep_trust", died)
    with pytest.raises(RuntimeError):
        await clicks.decide_click(bot.services, entry)
    monkeypatch.undo()
    assert await storage.trust.active(bot.clock.now()) == []

    for _ in range(2):  # taken over, then replayed again by a decider that died after it
        await clicks.decide_click(bot.services, entry)
        await bot.services.background.idle()
    await approved_without_a_click(bot, 1)
    assert "Trusted until" in str(bot.slack.called("chat.update")[-1]["blocks"])
    [grant] = await storage.trust.active(bot.clock.now())
    assert grant.record_id == trust["value"].split(" ")[0] and grant.granted_by == ALICE
    trail = await storage.audit.read(count=100)
    assert len([e for e in trail if e.event == "trust_granted"]) == 1
    texts = [str(p.get("text")) for p in bot.slack.called("chat.postMessage")]
    assert len([t for t in texts if t.startswith(f"<@{CAROL}> :white_check_mark:")]) == 1
    assert bot.services.metrics.decisions == {"approved": 1}  # not again when taken over

    await start_cleanup(bot)  # the grant covers the next run
    await approved_without_a_click(bot, 2)
    assert bot.services.metrics.decisions == {"approved": 2}  # the approval under the trust


async def test_a_trust_click_whose_grant_redis_failed_to_keep_keeps_it_when_taken_again(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis fails as the grant the card shows is stored: the click is left to be taken
    again (not acknowledged), and the decider that takes it keeps the grant."""
    bot: Harness = await make_bot(trust_policy(), deciders=0)
    card = await start_cleanup(bot)
    [trust] = [e for e in card["blocks"][-1]["elements"] if e.get("action_id") == ids.TRUST]
    await bot.click(ids.TRUST, trust["value"], user=ALICE)
    [entry] = await storage.clicks.claim("decider", count=10)

    async def not_kept(**_: Any) -> None:
        raise StorageTimeoutError("store a trust grant: Redis did not answer in time")

    monkeypatch.setattr(storage.trust, "grant", not_kept)
    with pytest.raises(StorageError):  # the click stays unacknowledged, to be taken again
        await clicks.decide_click(bot.services, entry)
    monkeypatch.undo()
    assert await storage.trust.active(bot.clock.now()) == []

    await clicks.decide_click(bot.services, entry)
    [grant] = await storage.trust.active(bot.clock.now())
    assert grant.record_id == trust["value"].split(" ")[0] and grant.granted_by == ALICE


async def test_a_held_trust_approval_whose_grant_redis_failed_to_keep_says_so(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The undo window ends and Redis fails as the grant is stored: the card reads
    "Trusted until", so its thread says the trust was not kept and later calls are asked."""
    window = timedelta(seconds=60)
    bot = await trust_held(make_bot, window)

    async def not_kept(**_: Any) -> None:
        raise StorageTimeoutError("store a trust grant: Redis did not answer in time")

    monkeypatch.setattr(storage.trust, "grant", not_kept)
    bot.clock.advance(window * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await approved_without_a_click(bot, 1)
    monkeypatch.undo()

    assert "Trusted until" in str(bot.slack.called("chat.update")[-1]["blocks"])
    assert await storage.trust.active(bot.clock.now()) == []
    [said] = [t for t in bot.thread() if t.startswith(":warning:")]
    assert said == (
        ":warning: The trust given with this approval was not kept (Signoff's storage "
        "failed): later calls of `delete_files` are asked again."
    )
    again = await start_cleanup(bot)
    assert any(b["type"] == "actions" for b in again["blocks"])
