"""The demo's Slack flows as its users click through them over the sandbox's HTTP interface:
an approval, a restart keeping what was pending, a quorum, an away delegation, a trust grant."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

from demo_users import ALICE, BOB, CAROL, DAVE, GENERAL, OPS, State
from demo_users import approve as _approve
from demo_users import find_button as _button
from demo_users import headed as _headed
from demo_users import start_demo as _start
from demo_users import stop_demo as _stop
from demo_users import thread_says as _thread_says

from sandbox import SandboxClient

TRUST = "signoff.trust"
REVOKE_TRUST = "signoff.revoke_trust"


async def test_demo_approves_then_restarts_with_what_was_pending(tmp_path: Path) -> None:
    data_dir = tmp_path / "demo"
    first = await _start(data_dir)
    async with SandboxClient(first.url) as slack:
        await slack.command(ALICE, channel=GENERAL, command="/signoff", text="run file-cleanup")
        cleanup = await slack.wait_for(
            BOB, _headed("Approval needed: delete_files", pending=True), channel=GENERAL
        )
        await _approve(slack, BOB, GENERAL, cleanup)
        await slack.wait_for(
            BOB, _thread_says("Finished: Cleanup finished"), channel=GENERAL, thread=cleanup["ts"]
        )

        await slack.command(CAROL, channel=GENERAL, command="/signoff", text="run email")
        email = await slack.wait_for(
            CAROL, _headed("Approval needed: send_email", pending=True), channel=GENERAL
        )
        # Stop while a page is open (a long poll is waiting), as a person would.
        version = (await slack.state(CAROL))["version"]
        page = asyncio.ensure_future(slack.state(CAROL, since=version))
        assert await _stop(first) < 5.0
        await asyncio.gather(page, return_exceptions=True)

    second = await _start(data_dir)
    async with SandboxClient(second.url) as slack:
        state = await slack.state(CAROL, channel=GENERAL)
        left = _headed("Approval needed: send_email", pending=True)(state)
        assert left is not None and left["ts"] == email["ts"]
        done = _headed("Approved: delete_files", pending=False)(state)
        assert done is not None and done["ts"] == cleanup["ts"]

        await _approve(slack, CAROL, GENERAL, left)
        await slack.wait_for(
            CAROL, _thread_says("Finished: Done: sent"), channel=GENERAL, thread=email["ts"]
        )
        # The card's redraw and the resumed run's thread are independent: waited for too.
        await slack.wait_for(CAROL, _headed("Approved: send_email", pending=False), channel=GENERAL)
    await _stop(second)


async def test_oncall_cleanup_waits_for_two_oncall_approvals(tmp_path: Path) -> None:
    demo = await _start(tmp_path / "demo")
    async with SandboxClient(demo.url) as slack:
        await slack.command(DAVE, channel=GENERAL, command="/signoff", text="run oncall-cleanup")
        request = await slack.wait_for(
            ALICE, _headed("Approval needed: delete_volumes", pending=True), channel=OPS
        )
        assert "Delete 3 unattached volume(s), 420 GB" in str(request["blocks"])

        await _approve(slack, DAVE, OPS, request)  # asked for it, and not on call
        await _approve(slack, ALICE, OPS, request)
        await _approve(slack, ALICE, OPS, request)  # her vote counts once
        for user, why in (
            (DAVE, "not among the approvers"),
            (ALICE, "already counted (1 of 2)"),
        ):
            await slack.wait_for(
                user,
                lambda s, why=why: any(why in e["text"] for e in s["ephemerals"]),
                channel=OPS,
            )

        await _approve(slack, BOB, OPS, request)
        await slack.wait_for(
            ALICE,
            _thread_says("Finished: Deleted 3 stale volume(s) in eu-west-1"),
            channel=OPS,
            thread=request["ts"],
        )
        decided = await slack.wait_for(
            ALICE, _headed("Approved: delete_volumes", pending=False), channel=OPS
        )
        assert "Approved by <@U0ALICE>, <@U0BOB>" in str(decided["blocks"])
    await _stop(demo)


def _home_shows(text: str, *, shown: bool = True) -> Callable[[State], State | None]:
    """A probe for the Home tab once it shows ``text`` (or, ``shown=False``, once it does not)."""
    return lambda state: (home := state.get("home")) and (text in str(home)) == shown and home


async def test_away_takes_a_typed_mention_and_a_trust_grant_is_revocable_in_home(
    tmp_path: Path,
) -> None:
    demo = await _start(tmp_path / "demo")
    async with SandboxClient(demo.url) as slack:
        back = (date.today() + timedelta(days=30)).isoformat()
        ack = await slack.command(
            ALICE, channel=GENERAL, command="/signoff", text=f"away until {back} to @bob"
        )
        assert "ask <@U0BOB> in your place" in ack["body"]["text"], ack

        await slack.command(CAROL, channel=GENERAL, command="/signoff", text="run email")
        email = await slack.wait_for(
            CAROL, _headed("Approval needed: send_email", pending=True), channel=GENERAL
        )
        trust = _button(email, TRUST)
        assert trust is not None, email
        await slack.click(CAROL, channel=GENERAL, message_ts=email["ts"], **trust)
        await slack.wait_for(CAROL, _headed("Approved: send_email", pending=False), channel=GENERAL)
        await slack.command(CAROL, channel=GENERAL, command="/signoff", text="run email")
        await slack.wait_for(
            CAROL,
            lambda s: any("Approved under the trust" in str(m) for m in s["messages"]),
            channel=GENERAL,
        )
        await slack.open_home(CAROL)
        home = await slack.wait_for(CAROL, _home_shows("Trust in force: 1"))
        await slack.click_in_view(CAROL, view_id=home["id"], action_id=REVOKE_TRUST)
        await slack.wait_for(CAROL, _home_shows("Trust in force", shown=False))
    await _stop(demo)
