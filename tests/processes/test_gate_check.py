"""``signoff gate --check``: an approval is of what the card showed, so a check whose output
changed (before the run, or by a retry) runs nothing and asks again; one unchanged runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gate_stack import Stack
from procs import (
    ALICE,
    GENERAL,
)

from bot.ui import ids
from signoff.gate_cli import CHECK_FAILED


async def test_a_changed_check_is_not_run_but_asked_again_and_runs_once_reapproved(
    stack: Stack, tmp_path: Path
) -> None:
    volumes = tmp_path / "volumes"
    volumes.write_text("vol-a 10G\nvol-b 20G\n")
    gate = await stack.gate("--check", f"cat {volumes}")
    await stack.waiting(gate)
    card = await stack.card()
    assert "*It will act on*" in str(card.blocks) and "vol-b 20G" in str(card.blocks)

    volumes.write_text("vol-a 10G\nvol-c 5G\n")  # the world moved on while the card waited
    await stack.click(card, ids.APPROVE)
    again = await stack.asked_again(card)
    shown = str(again.blocks)
    assert "Changed since it was approved" in shown
    assert shown.index("vol-c 5G") < shown.index("Removed") < shown.index("vol-b 20G")
    ws = stack.sandbox.workspace
    first = await stack.sandbox.wait_for(
        lambda: next(
            (
                str(m.blocks)
                for m in [ws.message(GENERAL, card.ts)]
                if m and "Changed since it was approved: Delete 42" in str(m.blocks)
            ),
            None,
        ),
        within=15,
    )
    assert "Not run" in first and not stack.marks.exists()

    await stack.click(again, ids.APPROVE)
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    assert "changed since it was approved; asking again" in err.decode()
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"  # once, after the second approval


async def test_a_retry_is_bound_to_what_its_card_showed_not_to_its_own_check(
    stack: Stack, tmp_path: Path
) -> None:
    """The card showed vol-b; by the retry (same key) the check prints vol-c: approving
    that card runs nothing, and the approvers are asked again about vol-c."""
    volumes = tmp_path / "volumes"
    volumes.write_text("vol-a 10G\nvol-b 20G\n")
    check = ("--check", f"cat {volumes}", "--idempotency-key", "cleanup-2026-11-24")
    first = await stack.gate(*check)
    await stack.waiting(first)
    card = await stack.card()
    first.kill()  # a cron host rebooted before anyone decided
    await first.wait()

    volumes.write_text("vol-a 10G\nvol-c 5G\n")
    retry = await stack.gate(*check)
    await stack.waiting(retry)  # re-attached to the card that shows vol-b
    await stack.click(card, ids.APPROVE)
    again = await stack.asked_again(card)
    shown = str(again.blocks)
    assert "Changed since it was approved" in shown
    assert shown.index("vol-c 5G") < shown.index("Removed") < shown.index("vol-b 20G")
    assert not stack.marks.exists()  # the approval was of vol-b, not of vol-c

    await stack.click(again, ids.APPROVE)
    _, err = await asyncio.wait_for(retry.communicate(), 30)
    assert retry.returncode == 0, err
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"  # once, after the second approval


async def test_a_retry_whose_check_is_unchanged_reattaches_and_runs(
    stack: Stack, tmp_path: Path
) -> None:
    volumes = tmp_path / "volumes"
    volumes.write_text("vol-a 10G\nvol-b 20G\n")
    check = ("--check", f"cat {volumes}", "--idempotency-key", "cleanup-2026-11-24")
    first = await stack.gate(*check)
    await stack.waiting(first)
    card = await stack.card()
    first.kill()
    await first.wait()
    again = await stack.gate(*check)
    await stack.waiting(again)
    await stack.click(card, ids.APPROVE)
    _, err = await asyncio.wait_for(again.communicate(), 30)
    assert again.returncode == 0, err
    assert len(stack.sandbox.workspace.history(GENERAL)) == 1
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"


async def test_a_check_failing_once_approved_runs_nothing_and_says_so_in_the_cards_thread(
    stack: Stack, tmp_path: Path
) -> None:
    """The card reads approved; its thread says the command did not run, and why."""
    checked = tmp_path / "checked"
    gate = await stack.gate("--check", f"test -e {checked} && exit 4; touch {checked}; echo v")
    await stack.waiting(gate)
    card = await stack.card()
    await stack.click(card, ids.APPROVE)
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == CHECK_FAILED, err
    assert "but --check failed: the command was not run" in err.decode()
    why = "its --check failed once it was decided, so the command did not run."
    assert stack.replies(card)[-1] == f"Delete 42 stale volumes: not run: {why}"
    assert not stack.marks.exists()
