"""One approval, one run: a gate retried under the same idempotency key (a cron job or CI
step run again after its first attempt was killed) never runs an approved command a
second time; it says how the approval was used, and how to ask afresh."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from gate_stack import MARK, Stack
from procs import ALICE, BOB, GENERAL

from bot.api.schemas import NewRequest
from bot.ui import ids
from sandbox.entities import Message
from signoff import Client
from signoff.gate_cli import CHECK_FAILED, EXIT_CODES, FOLLOWED, REFUSED, USED
from storage import connect
from storage.requests import Param

KEY = ("--idempotency-key", "cleanup-2026-11-28")


async def _said_until(gate: asyncio.subprocess.Process, text: bytes) -> list[bytes]:
    """The gate's lines on stderr up to the first that says ``text``."""
    assert gate.stderr is not None
    said: list[bytes] = []
    while not said or text not in said[-1]:
        said.append(await asyncio.wait_for(gate.stderr.readline(), 30))
        assert said[-1], said
    return said


async def _asking_again(stack: Stack, card: Message, count: int) -> Message:
    """The ``count``-th card in ``card``'s thread asking again for an approval."""
    ws = stack.sandbox.workspace
    cards = await stack.sandbox.wait_for(
        lambda: [m for m in ws.replies(GENERAL, card.ts)[1:] if m.blocks][count - 1 :] or None,
        within=15,
    )
    return cards[0]


def _held_check(tmp_path: Path, listed: str) -> tuple[str, Path, Path]:
    """A ``--check`` printing ``listed`` that, while the ``hold`` file exists, marks that
    it runs (``checking``) and waits: the test asks the approval again meanwhile."""
    volumes, hold, checking = (tmp_path / name for name in ("volumes", "hold", "checking"))
    volumes.write_text(listed)
    check = (
        f"cat {volumes}; if [ -e {hold} ]; then touch {checking}; fi; "
        f"while [ -e {hold} ]; do sleep 0.05; done"
    )
    return check, hold, checking


def _asking_again_for(request_id: str, listed: str, *, key: str) -> NewRequest:
    """Another gate's request asking again for the approval of ``request_id``."""
    return NewRequest(
        title="Delete 42 stale volumes",
        channel=GENERAL,
        approvers=[ALICE, BOB],
        params=[Param(name="limit", type="integer", value=42, editable=True)],
        acts_on=listed,
        supersedes=request_id,
        idempotency_key=key,
    )


async def _events(stack: Stack) -> list[str]:
    storage = await connect(
        stack.env["REDIS_URL"], prefix=stack.env.get("SIGNOFF_REDIS_PREFIX", "signoff")
    )
    try:
        return [e.event for e in await storage.audit.read(count=200)]
    finally:
        await storage.close()


async def test_a_retry_after_the_command_ran_exits_as_it_did_and_does_not_run_it_again(
    stack: Stack,
) -> None:
    first = await stack.gate(*KEY, command=f"{MARK}; exit 3")
    await stack.waiting(first)
    card = await stack.card()
    await stack.click(card, ids.APPROVE)
    await asyncio.wait_for(first.communicate(), 30)
    assert first.returncode == 3
    told = await stack.sandbox.wait_for(
        lambda: [t for t in stack.replies(card) if "failed (exit 3)" in t] or None, within=15
    )

    again = await stack.gate(*KEY, command=f"{MARK}; exit 3")
    _, err = await asyncio.wait_for(again.communicate(), 30)
    said = err.decode()
    assert again.returncode == 3, said
    assert "signoff gate: approved by " in said and f"({ALICE})" in said
    assert "the command already ran under this approval, at " in said
    assert "failed (exit 3) in " in said and "; not run again: http" in said
    assert "exiting 3, as that run did" in said and "give a new --idempotency-key" in said
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"  # run once
    assert [t for t in stack.replies(card) if "failed (exit 3)" in t] == told
    assert [e for e in await _events(stack) if e in ("started", "outcome")] == [
        "started",
        "outcome",
    ]


async def test_a_retry_after_a_gate_killed_while_its_command_ran_does_not_run_it_again(
    stack: Stack,
) -> None:
    first = await stack.gate(*KEY, command=f"{MARK}; sleep 60")
    await stack.waiting(first)
    card = await stack.card()
    await stack.click(card, ids.APPROVE)
    assert await stack.sandbox.wait_for(lambda: stack.marks.exists() or None, within=15)
    os.killpg(first.pid, signal.SIGKILL)  # the CI runner's time ran out: nothing reported
    await first.wait()

    again = await stack.gate(*KEY)
    _, err = await asyncio.wait_for(again.communicate(), 30)
    said = err.decode()
    assert again.returncode == USED, said
    assert "an earlier gate started the command at " in said
    assert "and did not report how it ended" in said and "not run again: http" in said
    assert "give a new --idempotency-key" in said
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"

    fresh = await stack.gate("--idempotency-key", "cleanup-2026-11-28-again")
    await stack.waiting(fresh)  # a new key asks afresh: a new card
    await stack.click(await stack.card(2), ids.APPROVE)
    _, err = await asyncio.wait_for(fresh.communicate(), 30)
    assert fresh.returncode == 0, err
    assert stack.marks.read_text() == f"{ALICE} limit=42\n" * 2


async def test_a_retry_after_a_gate_that_did_not_run_its_command_does_not_run_it(
    stack: Stack, tmp_path: Path
) -> None:
    volumes = tmp_path / "volumes"
    volumes.write_text("vol-a 10G\n")
    first = await stack.gate(*KEY, "--check", f"cat {volumes}")
    await stack.waiting(first)
    card = await stack.card()
    volumes.unlink()  # its check fails once approved: the approved command is not run
    await stack.click(card, ids.APPROVE)
    await asyncio.wait_for(first.communicate(), 30)
    assert first.returncode == CHECK_FAILED

    volumes.write_text("vol-a 10G\n")
    again = await stack.gate(*KEY, "--check", f"cat {volumes}")
    _, err = await asyncio.wait_for(again.communicate(), 30)
    said = err.decode()
    assert again.returncode == USED, said
    assert "an earlier gate did not run the command under this approval (at " in said
    assert "its --check failed once it was decided" in said and "give a new" in said
    assert not stack.marks.exists()


async def test_two_gates_on_one_key_run_the_approved_command_once(stack: Stack) -> None:
    first = await stack.gate(*KEY, command=f"{MARK}; sleep 2")
    await stack.waiting(first)
    second = await stack.gate(*KEY, command=f"{MARK}; sleep 2")
    await stack.waiting(second)
    await stack.click(await stack.card(), ids.APPROVE)
    done = await asyncio.wait_for(asyncio.gather(first.communicate(), second.communicate()), 30)
    codes = sorted(g.returncode or 0 for g in (first, second))
    said = [err.decode() for _, err in done]
    assert codes == [0, USED] or codes == [0, 0], said
    assert sum("not run again" in s for s in said) == 1, said
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"
    assert len(stack.sandbox.workspace.history(GENERAL)) == 1


async def test_a_retry_meeting_a_superseded_approval_follows_the_request_that_asks_again(
    stack: Stack, tmp_path: Path
) -> None:
    """The first gate's check changed once approved, so it asked again, and was killed while
    that request waited. Its retry re-attaches by key to the old approval, whose check
    output is back to what its card showed: the old approval is not used; the retry waits
    on the request asking again, checks again once that is approved, and asks again."""
    volumes = tmp_path / "volumes"
    volumes.write_text("vol-a 10G\nvol-b 20G\n")
    check = (*KEY, "--check", f"cat {volumes}")
    first = await stack.gate(*check)
    await stack.waiting(first)
    card = await stack.card()
    volumes.write_text("vol-a 10G\nvol-c 5G\n")
    await stack.click(card, ids.APPROVE)
    again = await stack.asked_again(card)
    os.killpg(first.pid, signal.SIGKILL)  # the cron host rebooted while it waited again
    await first.wait()

    volumes.write_text("vol-a 10G\nvol-b 20G\n")  # what the superseded approval was of
    retry = await stack.gate(*check)
    assert retry.stderr is not None
    followed = await asyncio.wait_for(retry.stderr.readline(), 30)
    assert b" was asked again as req_" in followed and b"; following it" in followed, followed
    await stack.waiting(retry)  # on the request asking again, not on the old approval
    assert not stack.marks.exists()

    await stack.click(again, ids.APPROVE)  # of vol-c; the check prints vol-b again
    ws = stack.sandbox.workspace
    third = await stack.sandbox.wait_for(
        lambda: next(iter([m for m in ws.replies(GENERAL, card.ts)[1:] if m.blocks][1:]), None),
        within=15,
    )
    assert "Changed since it was approved" in str(third.blocks)
    assert not stack.marks.exists()
    await stack.click(third, ids.APPROVE)
    _, err = await asyncio.wait_for(retry.communicate(), 30)
    assert retry.returncode == 0, err
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"  # once, under the last approval
    assert (await _events(stack)).count("started") == 1


async def test_a_gate_whose_approval_is_asked_again_before_it_starts_follows_that_request(
    stack: Stack, tmp_path: Path
) -> None:
    """Approved, and checked unchanged, but asked again (by another gate on its key, whose
    check changed) before its start was taken: the gate runs nothing under the approval
    asked again; it follows to the request asking again, waits, checks, and runs once."""
    listed = "vol-a 10G\nvol-b 20G\n"
    check, hold, checking = _held_check(tmp_path, listed)
    gate = await stack.gate(*KEY, "--check", check)
    first = (await stack.waiting(gate)).split()[3]
    card = await stack.card()
    hold.touch()  # its check once approved waits while the approval is asked again
    await stack.click(card, ids.APPROVE)
    assert await stack.sandbox.wait_for(lambda: checking.exists() or None, within=15)
    async with Client(stack.env["SIGNOFF_URL"], stack.env["SIGNOFF_TOKEN"]) as client:
        again = await client.create(_asking_again_for(first, listed, key="asked-again"))
    hold.unlink()

    said = await _said_until(gate, b"; following it")
    assert f"request {first} was asked again as {again.id}".encode() in said[-1], said
    await stack.waiting(gate)
    assert not stack.marks.exists()
    await stack.click(await stack.asked_again(card), ids.APPROVE)
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"
    assert (await _events(stack)).count("started") == 1


async def test_a_gate_whose_approval_is_asked_again_time_after_time_gives_up_running_nothing(
    stack: Stack, tmp_path: Path
) -> None:
    """Each approval it waits on is asked again before its start is taken: it follows,
    FOLLOWED times, then exits 14 saying the command was not run and how to go on; that
    advice, a new key, asks afresh and runs the command once approved."""
    listed = "vol-a 10G\n"
    check, hold, checking = _held_check(tmp_path, listed)
    gate = await stack.gate(*KEY, "--check", check)
    async with Client(stack.env["SIGNOFF_URL"], stack.env["SIGNOFF_TOKEN"]) as client:
        for asked in range(FOLLOWED):
            waiting = (await _said_until(gate, b"waiting for approval"))[-1]
            if asked == 0:
                card = shown = await stack.card()
            else:
                shown = await _asking_again(stack, card, asked)
            hold.touch()  # its check once approved waits while the approval is asked again
            await stack.click(shown, ids.APPROVE)
            assert await stack.sandbox.wait_for(lambda: checking.exists() or None, within=15)
            superseded = waiting.split()[3].decode()
            await client.create(_asking_again_for(superseded, listed, key=f"asked-again-{asked}"))
            checking.unlink()
            hold.unlink()

    _, err = await asyncio.wait_for(gate.communicate(), 30)
    said = err.decode()
    assert gate.returncode == REFUSED, said
    assert f"its approval was asked again {FOLLOWED} times before the command could start" in said
    assert "the command was not run" in said
    assert "to ask for a new approval, give a new --idempotency-key" in said
    assert f"asked again {FOLLOWED} times" in EXIT_CODES[REFUSED]
    assert not stack.marks.exists()
    assert "started" not in await _events(stack)

    fresh = await stack.gate("--idempotency-key", "cleanup-2026-11-28-again", "--check", check)
    await stack.waiting(fresh)
    await stack.click(await stack.card(2), ids.APPROVE)
    _, err = await asyncio.wait_for(fresh.communicate(), 30)
    assert fresh.returncode == 0, err
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"
