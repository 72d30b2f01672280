"""Trust grants in App Home: a Revoke that changes nothing says why on the clicker's
Home, and the granter's Home drops a grant an admin revoked."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import home_click_payload
from harness import ALICE, BOB, CHANNEL, MALLORY, Harness
from home_lists import last_home, open_home, redrawn

from bot.ui import ids
from storage.trust_grants import TrustGrant


async def _grant(bot: Harness) -> TrustGrant:
    """A grant Alice gave: ``delete_files`` of ``cleanup`` in the channel, for an hour."""
    now = bot.clock.now()
    grant = await bot.services.storage.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel=CHANNEL,
        args_digest=None,
        granted_by=ALICE,
        granted_at=now,
        expires_at=now + timedelta(hours=1),
        record_id="run_0123456789abcdef01234567/int_0123456789abcdef0123456789abcdef",
    )
    assert grant is not None
    return grant


async def test_a_revoke_by_someone_else_says_who_may_and_keeps_the_grant(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    grant = await _grant(bot)
    forged = home_click_payload(user=MALLORY, action_id=ids.REVOKE_TRUST, value=grant.id)
    home = await redrawn(bot, bot.send(forged), MALLORY)
    assert "Only who gave a trust, or an admin, may revoke it" in str(home[0])
    assert [g.id for g in await bot.services.storage.trust.active(bot.clock.now())] == [grant.id]


async def test_a_revoke_of_a_grant_already_ended_says_so(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    grant = await _grant(bot)
    bot.clock.advance(timedelta(hours=2))
    late = home_click_payload(user=ALICE, action_id=ids.REVOKE_TRUST, value=grant.id)
    home = await redrawn(bot, bot.send(late), ALICE)
    assert "This trust had already ended" in str(home[0])


async def test_the_granters_home_drops_a_grant_an_admin_revoked(make_bot: Any) -> None:
    bot: Harness = await make_bot(admins=(BOB,))
    grant = await _grant(bot)
    assert ids.REVOKE_TRUST in str(await open_home(bot, ALICE))
    revoke = home_click_payload(user=BOB, action_id=ids.REVOKE_TRUST, value=grant.id)
    await redrawn(bot, bot.send(revoke), BOB)
    await bot.slack.wait_for(
        lambda: ids.REVOKE_TRUST not in str(last_home(bot, ALICE)), what="Alice's Home redrawn"
    )
