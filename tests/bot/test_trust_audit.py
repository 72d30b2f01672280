"""Trust whose audit entry Redis fails to write: the grant or revocation itself holds,
and nothing says otherwise (not "not kept", not "not revoked")."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from fakes import home_click_payload
from harness import ALICE, Harness
from trust_runs import approved_without_a_click, start_cleanup, trust_held, trust_policy

from bot.decisions.clicks import made_final
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import Storage
from storage.audit import AuditEntry
from storage.errors import StorageTimeoutError


def _trust_not_audited(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis fails as a grant's audit entry is written, after the grant itself changed."""
    append = storage.audit.append

    async def failing(entry: AuditEntry) -> str:
        if entry.event.startswith("trust_"):
            raise StorageTimeoutError("append to the audit trail: Redis did not answer in time")
        return await append(entry)

    monkeypatch.setattr(storage.audit, "append", failing)


async def test_a_revoke_whose_audit_entry_redis_failed_to_write_is_still_told_as_revoked(
    make_bot: Any,
    storage: Storage,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The grant is gone: the log does not say "not revoked", Home is redrawn without it,
    and the granting card's thread says it ended."""
    bot: Harness = await make_bot(trust_policy())
    card = await start_cleanup(bot)
    await bot.click(ids.TRUST, card["blocks"][-1]["elements"][0]["value"], user=ALICE)
    await approved_without_a_click(bot, 1)
    await bot.clicks_done()  # the grant is kept by the click decider, not the resumed run
    [grant] = await storage.trust.active(bot.clock.now())
    _trust_not_audited(storage, monkeypatch)
    caplog.set_level(logging.INFO, logger="bot")
    published = len(bot.slack.called("views.publish"))
    await bot.send(home_click_payload(user=ALICE, action_id=ids.REVOKE_TRUST, value=grant.id))
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("views.publish")) > published, what="Home redrawn"
    )
    assert await storage.trust.active(bot.clock.now()) == []
    assert any(t.startswith(f":unlock: <@{ALICE}> revoked this trust") for t in bot.thread())
    told = [r.getMessage() for r in caplog.records]
    assert not any("not revoked" in line for line in told), told
    assert f"trust {grant.id}: trust_revoked not audited" in " ".join(told), told


async def test_a_held_trust_approval_whose_audit_entry_failed_does_not_say_not_kept(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The undo window ends, the grant is stored, only its audit entry fails: the trust
    holds, so the thread does not say it was not kept, and later calls are covered."""
    window = timedelta(seconds=60)
    bot = await trust_held(make_bot, window)
    _trust_not_audited(storage, monkeypatch)
    bot.clock.advance(window * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    await approved_without_a_click(bot, 1)
    monkeypatch.undo()

    assert len(await storage.trust.active(bot.clock.now())) == 1
    assert not any(t.startswith(":warning:") for t in bot.thread()), bot.thread()
    await start_cleanup(bot)
    await bot.slack.wait_for(
        lambda: f"Approved under the trust <@{ALICE}> gave" in str(bot.slack.called("chat.update")),
        what="the next call approved under the trust",
    )
