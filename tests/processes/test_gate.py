"""`signoff gate` as a shell job runs it: real processes, the sandbox, a real Redis.

A named client is made with `signoff token create`; `signoff serve` answers Slack and the
API; each gate is the installed console script, gating a shell command that leaves a mark.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from procs import (
    ALICE,
    BOB,
    GENERAL,
    SIGNOFF,
    free_port,
    signoff_env,
    start_signoff,
    until_healthy,
)

from bot.ui import ids
from sandbox import Sandbox
from sandbox.entities import Message
from signoff.gate_cli import DENIED, EXPIRED, USAGE, WITHDRAWN
from storage import connect

MARK = 'echo "$SIGNOFF_DECIDED_BY limit=$SIGNOFF_PARAM_LIMIT" >> "$MARKS"; echo cleaned up'


@dataclass
class Stack:
    sandbox: Sandbox
    env: dict[str, str]
    log: Path
    marks: Path
    port: int
    server: subprocess.Popen[bytes]
    gates: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def stop(self) -> None:
        """SIGTERM, then wait (in a thread: the sandbox answers on this event loop)."""
        self.server.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(self.server.wait, 15)
        assert code == 0, self.log.read_text()

    def serve(self) -> None:
        self.server = start_signoff("serve", env=self.env, log=self.log)

    async def healthy(self) -> None:
        await until_healthy(f"http://127.0.0.1:{self.port}/healthz", self.server, self.log)

    async def gate(self, *args: str, command: str | None = MARK) -> asyncio.subprocess.Process:
        """A gate; one still running when its test ends (a failed one) is killed then."""
        tail = ["--", "sh", "-c", command] if command else []
        gate = await asyncio.create_subprocess_exec(
            str(SIGNOFF),
            "gate",
            "--channel",
            GENERAL,
            "--approvers",
            f"{ALICE},{BOB}",
            "--title",
            "Delete 42 stale volumes",
            "--editable",
            "limit=42",
            *args,
            *tail,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its command too is killed with it
        )
        self.gates.append(gate)
        return gate

    async def waiting(self, gate: asyncio.subprocess.Process) -> str:
        """The gate's first line, once it says it waits (its card is posted and recorded)."""
        assert gate.stderr is not None
        line = await asyncio.wait_for(gate.stderr.readline(), 30)
        assert b"waiting for approval" in line, line
        return line.decode()

    async def card(self, count: int = 1) -> Message:
        ws = self.sandbox.workspace

        def cards() -> list[Message]:
            return [m for m in ws.history(GENERAL) if "Delete 42 stale volumes" in str(m.blocks)]

        found = await self.sandbox.wait_for(lambda: len(cards()) >= count or None, within=15)
        assert found
        return cards()[-1]

    async def click(self, card: Message, action: str, user: str = ALICE) -> None:
        ack = await self.sandbox.interactions.click(
            user, channel=GENERAL, message_ts=card.ts, action_id=action
        )
        assert ack.status == "acked", ack

    async def asked_again(self, card: Message) -> Message:
        """The card in ``card``'s thread that asks again (its check's output changed)."""
        ws = self.sandbox.workspace
        return await self.sandbox.wait_for(
            lambda: next((m for m in ws.replies(GENERAL, card.ts)[1:] if m.blocks), None),
            within=15,
        )

    def replies(self, card: Message) -> list[str]:
        return [m.text for m in self.sandbox.workspace.replies(GENERAL, card.ts)[1:]]


@pytest.fixture
async def stack(sandbox: Sandbox, redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    env = signoff_env(sandbox, redis_url, marks, port)
    sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
    # The server starts while the client is made: it needs no token, only the gates do.
    server = start_signoff("serve", env=env, log=log)
    try:
        made = await asyncio.create_subprocess_exec(
            str(SIGNOFF),
            *("token", "create", "nightly-cleanup", "--channels", GENERAL),
            env=env,
            stdout=asyncio.subprocess.PIPE,
        )
        printed, _ = await made.communicate()
        assert made.returncode == 0
    except BaseException:
        server.kill()
        server.wait()
        raise
    token = printed.decode().splitlines()[0].removeprefix("SIGNOFF_TOKEN=")
    env |= {"SIGNOFF_URL": f"http://127.0.0.1:{port}", "SIGNOFF_TOKEN": token, "MARKS": str(marks)}
    running = Stack(sandbox, env, log, marks, port, server)
    await running.healthy()
    yield running
    for gate in running.gates:
        if gate.returncode is None:
            os.killpg(gate.pid, signal.SIGKILL)
            await gate.wait()
    await running.stop()
    assert token not in log.read_text()


async def test_an_approved_command_runs_once_with_the_decision_and_reports_back(
    stack: Stack,
) -> None:
    gate = await stack.gate("--json")
    waiting = await stack.waiting(gate)
    card = await stack.card()
    await stack.click(card, ids.APPROVE)
    out, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    decision, ran = out.decode().splitlines()
    assert json.loads(decision)["status"] == "approved" and ran == "cleaned up"
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"
    assert f"request {json.loads(decision)['id']} waiting for approval: http" in waiting
    outcome = await stack.sandbox.wait_for(
        lambda: next((t for t in stack.replies(card) if "succeeded" in t), None), within=15
    )
    assert outcome.startswith("Delete 42 stale volumes: succeeded in ")
    assert outcome.endswith("\ncleaned up")
    storage = await connect(
        stack.env["REDIS_URL"], prefix=stack.env.get("SIGNOFF_REDIS_PREFIX", "signoff")
    )
    try:
        audit = await storage.audit.read(count=200)
    finally:
        await storage.close()
    assert [e.event for e in audit if e.event in ("approved", "outcome")] == [
        "approved",
        "outcome",
    ]


async def test_a_denied_command_does_not_run(stack: Stack) -> None:
    gate = await stack.gate()
    await stack.waiting(gate)
    card = await stack.card()
    await stack.click(card, ids.DENY, user=BOB)
    modal = await stack.sandbox.wait_for(
        lambda: next(iter(stack.sandbox.workspace.modals(BOB)), None), within=10
    )
    await stack.sandbox.interactions.submit_view(
        BOB, view_id=modal.id, values={ids.INPUT_BLOCK: {ids.INPUT_ACTION: "not tonight"}}
    )
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == DENIED
    assert "denied by bob (U0BOB): not tonight" in err.decode()
    assert not stack.marks.exists()


async def test_an_expired_request_does_not_run_its_command(stack: Stack) -> None:
    gate = await stack.gate("--expires", "1s")
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == EXPIRED, err
    assert not stack.marks.exists()
    card = await stack.card()
    assert "Expired" in str(stack.sandbox.workspace.message(GENERAL, card.ts).blocks)


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
    cards = [m for m in stack.sandbox.workspace.history(GENERAL) if ids.APPROVE in str(m.blocks)]
    assert cards == [] and len(stack.sandbox.workspace.history(GENERAL)) == 1
    assert stack.marks.read_text() == f"{ALICE} limit=42\n"


async def test_usage_errors_exit_2_and_post_nothing(stack: Stack) -> None:
    for args in (("--expires", "soon"), ("--approvers", "alice")):
        gate = await stack.gate(*args)
        _, err = await asyncio.wait_for(gate.communicate(), 30)
        assert gate.returncode == USAGE, err
        assert err.decode().startswith("signoff gate: ")
    env = stack.env
    stack.env = {**env, "SIGNOFF_URL": env["SIGNOFF_URL"].removeprefix("http://")}
    try:
        gate = await stack.gate()
        _, err = await asyncio.wait_for(gate.communicate(), 30)
    finally:
        stack.env = env
    assert gate.returncode == USAGE and b"SIGNOFF_URL: use the server's http://" in err
    assert [m for m in stack.sandbox.workspace.history(GENERAL) if m.blocks] == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "name --approvers, or set --anyone-in-channel"),
        (("--approvers", ALICE, "--min-approvals", "3"), "--min-approvals 3 but only 1 may"),
        (("--approvers", ALICE, "--editable", "limit"), "--editable 'limit': use NAME=VALUE"),
        (("--approvers", "@nosuch"), "--approvers @nosuch: no user group @nosuch"),
    ],
    ids=["no-approvers", "min-approvals", "editable", "unknown-group"],
)
async def test_a_usage_error_names_the_option_as_typed(
    stack: Stack, args: tuple[str, ...], said: str
) -> None:
    """Not the API's field (``approvers.0``, ``min_approvals``): the server's 400 too."""
    gate = await asyncio.create_subprocess_exec(
        str(SIGNOFF),
        *("gate", "--channel", GENERAL, "--title", "Delete 42 stale volumes", *args),
        *("--", "sh", "-c", MARK),
        env=stack.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == USAGE, err
    assert err.decode().startswith(f"signoff gate: {said}"), err
    for named in ("approvers.0", "min_approvals", "anyone_in_channel", "--param"):
        assert named not in err.decode()
    assert not stack.marks.exists()
    assert [m for m in stack.sandbox.workspace.history(GENERAL) if m.blocks] == []


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


async def test_items_are_one_card_and_the_command_gets_the_approved_ones(stack: Stack) -> None:
    items = ("--item", "vol-a", "--item", "vol-b", "--item", "vol-c")
    command = (
        'printf "%s\\n" "$SIGNOFF_APPROVED_ITEMS" "excluded: $SIGNOFF_EXCLUDED_ITEMS" '
        '"token: ${SIGNOFF_TOKEN:-none}" >> "$MARKS"'
    )
    gate = await asyncio.create_subprocess_exec(
        str(SIGNOFF),
        *("gate", "--channel", GENERAL, "--approvers", f"{ALICE},{BOB}"),
        *("--title", "Delete 3 stale volumes", *items, "--", "sh", "-c", command),
        env=stack.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await stack.waiting(gate)
    ws = stack.sandbox.workspace
    card = await stack.sandbox.wait_for(
        lambda: next(
            (m for m in ws.history(GENERAL) if "asks about 3 items" in str(m.blocks)), None
        ),
        within=15,
    )
    # Alice unticks vol-b on the card, then approves the rest.
    boxes = [(b["block_id"], e) for b in card.blocks for e in b.get("elements", [])]
    ticked = {
        block_id: [o["value"] for o in e["options"] if "vol-b" not in str(o["text"])]
        for block_id, e in boxes
        if e.get("type") == "checkboxes"
    }
    ack = await stack.sandbox.interactions.click(
        ALICE,
        channel=GENERAL,
        message_ts=card.ts,
        action_id=ids.BATCH_APPROVE,
        ticked=ticked,
    )
    assert ack.status == "acked", ack
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    # The job's token is not passed on to the command it gates.
    assert stack.marks.read_text() == "vol-a\nvol-c\nexcluded: vol-b\ntoken: none\n"
    assert "Decided: Delete 3 stale volumes, 3 items" in str(ws.message(GENERAL, card.ts).blocks)  # type: ignore[union-attr]


async def test_a_reply_reaches_the_command_after_the_wait_says_who_may_decide_and_until_when(
    stack: Stack,
) -> None:
    reply = 'echo "reply=$SIGNOFF_REPLY by $SIGNOFF_DECIDED_BY" >> "$MARKS"'
    gate = await stack.gate("--expires", "8h", "--allow-reply", command=reply)
    await stack.waiting(gate)
    assert gate.stderr is not None
    who = (await asyncio.wait_for(gate.stderr.readline(), 10)).decode()
    left = (await asyncio.wait_for(gate.stderr.readline(), 10)).decode()
    assert who.startswith("signoff gate: who may decide: ") and ALICE in who and BOB in who
    assert re.match(r"signoff gate: expires in (7 h 59|8 h 0) min \(20\d\d-", left), left
    card = await stack.card()
    await stack.click(card, ids.REPLY, user=BOB)
    modal = await stack.sandbox.wait_for(
        lambda: next(iter(stack.sandbox.workspace.modals(BOB)), None), within=10
    )
    await stack.sandbox.interactions.submit_view(
        BOB, view_id=modal.id, values={ids.INPUT_BLOCK: {ids.INPUT_ACTION: "only vol-7"}}
    )
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    assert stack.marks.read_text() == f"reply=only vol-7 by {BOB}\n"


async def test_without_a_command_the_gate_only_waits_and_exits_0_once_approved(
    stack: Stack,
) -> None:
    gate = await stack.gate("--json", command=None)
    await stack.waiting(gate)
    card = await stack.card()
    assert gate.returncode is None  # it waits for the decision
    await stack.click(card, ids.APPROVE)
    out, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    [decision] = out.decode().splitlines()  # the decision alone: nothing else ran
    assert json.loads(decision)["status"] == "approved"
    assert json.loads(decision)["decided_by"] == ALICE


async def test_the_commands_output_streams_through_while_it_runs(
    stack: Stack, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    slow = f'echo started; while [ ! -e "{go}" ]; do sleep 0.05; done; echo finished'
    gate = await stack.gate(command=slow)
    await stack.waiting(gate)
    await stack.click(await stack.card(), ids.APPROVE)
    assert gate.stdout is not None
    # Shown as the command prints it, not once it ends: it ends only after this line.
    assert await asyncio.wait_for(gate.stdout.readline(), 30) == b"started\n"
    assert gate.returncode is None
    go.touch()
    out, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    assert out == b"finished\n"


async def test_a_param_an_approver_edits_on_the_card_reaches_the_command(stack: Stack) -> None:
    gate = await stack.gate()
    await stack.waiting(gate)
    await stack.click(await stack.card(), ids.EDIT, user=BOB)
    form = await stack.sandbox.wait_for(
        lambda: next(iter(stack.sandbox.workspace.modals(BOB)), None), within=10
    )
    assert "arg.limit" in str(form.spec["blocks"])  # a form field, not raw JSON
    ack = await stack.sandbox.interactions.submit_view(
        BOB, view_id=form.id, values={"arg.limit": {"value": "7"}}
    )
    assert ack is not None
    _, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    assert stack.marks.read_text() == f"{BOB} limit=7\n"
