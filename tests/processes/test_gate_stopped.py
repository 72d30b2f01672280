"""A gate stopped, killed or cut off from Signoff: a signal withdraws its request (or stops
it at once when Signoff is unreachable), a decision still reaches it across a bot
restart, and a retry with the same idempotency key reattaches to the one card."""

from __future__ import annotations

import asyncio
import signal

import pytest
from gate_stack import Stack
from procs import (
    ALICE,
    GENERAL,
    free_port,
)

from bot.ui import ids
from signoff.gate_cli import WITHDRAWN


async def test_ctrl_c_while_signoff_is_unreachable_stops_the_gate_at_once(stack: Stack) -> None:
    """The gate retries an unreachable server for a minute; a signal still stops it."""
    stack.env = {**stack.env, "SIGNOFF_URL": f"http://127.0.0.1:{free_port()}"}
    gate = await stack.gate()
    assert gate.stderr is not None
    line = await asyncio.wait_for(gate.stderr.readline(), 30)
    assert line.startswith(b"signoff gate: cannot reach Signoff at http://"), line
    assert b"(Connection refused); trying again" in line, line
    gate.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(gate.communicate(), 10)
    assert gate.returncode == WITHDRAWN, err
    assert "stopped before Signoff answered; the command was not run" in err.decode()
    assert "nothing was asked: Signoff was not reached" in err.decode()
    assert not stack.marks.exists()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
async def test_ctrl_c_or_sigterm_while_waiting_withdraws_the_request(
    stack: Stack, stop: signal.Signals
) -> None:
    gate = await stack.gate("--idempotency-key", "cleanup-2026-11-24")
    await stack.waiting(gate)
    card = await stack.card()
    gate.send_signal(stop)
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == WITHDRAWN, err
    shown = str(stack.sandbox.workspace.message(GENERAL, card.ts).blocks)
    assert "Withdrawn by nightly-cleanup" in shown and ids.APPROVE not in shown
    assert "withdrawing the request" in err.decode()
    # A retry with the same key finds the withdrawn request: it asks nothing again.
    again = await stack.gate("--idempotency-key", "cleanup-2026-11-24")
    _, err = await asyncio.wait_for(again.communicate(), 30)
    assert again.returncode == WITHDRAWN, err
    assert "waiting for approval" not in err.decode()  # it says how it ended, and what to do
    assert (
        "--idempotency-key cleanup-2026-11-24 is request req_" in err.decode()
        and "withdrawn earlier; give a new key to ask again" in err.decode()
    ), err
    assert len(stack.sandbox.workspace.history(GENERAL)) == 1
    assert not stack.marks.exists()


async def test_the_gate_gets_the_decision_across_a_bot_restart(stack: Stack) -> None:
    gate = await stack.gate()
    await stack.waiting(gate)
    card = await stack.card()
    await stack.stop()
    stack.serve()
    await stack.healthy()
    await stack.click(card, ids.APPROVE)
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"
    assert b"signoff gate: Signoff not reachable" in err  # it said why it was quiet


async def test_a_retried_gate_with_the_same_key_reattaches_to_one_card(stack: Stack) -> None:
    first = await stack.gate("--idempotency-key", "cleanup-2026-11-24")
    await stack.waiting(first)
    card = await stack.card()
    first.kill()  # a cron host rebooted: nothing withdrew the request
    await first.wait()
    again = await stack.gate("--idempotency-key", "cleanup-2026-11-24")
    await stack.waiting(again)
    await stack.click(card, ids.APPROVE)
    _, err = await asyncio.wait_for(again.communicate(), 30)
    assert again.returncode == 0, err
    # The card loses its buttons in a redraw after the decision the gate heard about.
    history = stack.sandbox.workspace.history
    await stack.sandbox.wait_for(
        lambda: not [m for m in history(GENERAL) if ids.APPROVE in str(m.blocks)], within=15
    )
    assert len(history(GENERAL)) == 1
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"
