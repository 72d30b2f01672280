"""A trust revoked in App Home while a card it covers is being posted: the bot found the
grant covering the card, then the revoke landed before the card was decided under it.
The approval is refused in the deciding step itself, and the card asks as usual."""

from __future__ import annotations

from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from agent_runtime.interrupts import Remember
from bot.agents.policy import Policy
from bot.decisions.trust_grants import revoke_trust
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.ui import ids
from storage.trust_grants import TrustGrant


def _cards(bot: Harness) -> list[dict[str, Any]]:
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


async def _run(bot: Harness) -> dict[str, Any]:
    before = len(_cards(bot))
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_for(lambda: len(_cards(bot)) > before, what="the card")
    return _cards(bot)[before]


async def test_a_trust_revoked_between_finding_it_and_deciding_leaves_the_card_asking(
    make_bot: Any,
) -> None:
    policy = Policy(users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60))
    bot: Harness = await make_bot(policy)
    first = await _run(bot)
    await bot.click(ids.TRUST, first["blocks"][-1]["elements"][0]["value"], user=ALICE)
    await bot.slack.wait_for(lambda: len(bot.tool_log.calls) == 1, what="the trusted run")

    trust = bot.services.storage.trust
    covering = trust.covering
    revoked: list[TrustGrant | str] = []

    async def revoked_as_it_is_found(**kwargs: Any) -> TrustGrant | None:
        grant = await covering(**kwargs)
        if grant is not None and not revoked:  # Alice clicks Revoke in App Home just now
            revoked.append(await revoke_trust(bot.services, grant.id, by=ALICE))
        return grant

    trust.covering = revoked_as_it_is_found  # type: ignore[method-assign]
    second = await _run(bot)
    assert [isinstance(r, TrustGrant) for r in revoked] == [True]
    assert any(b["type"] == "actions" for b in second["blocks"]), second  # it asks
    record_id = bot.record_id(second["blocks"][-1]["elements"][0]["value"])
    record = await bot.services.storage.queries.get(record_id)
    assert record is not None and (record.state, record.trust_grant) == ("pending", None)
    assert len(bot.tool_log.calls) == 1

    # Asked as usual: Bob's click approves it, and the tool runs for this run too.
    [posted] = [c.answer for c in bot.slack.calls if c.args is second]
    value = second["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=BOB, message_ts=posted["ts"])
    await bot.slack.wait_for(lambda: len(bot.tool_log.calls) == 2, what="the approved run")
