"""`signoff gate` as a shell job runs it: real processes, the sandbox, a real Redis.

What a card's decision does to the gated command: approved it runs once, with the
decision, the approved items and the edited params; denied or expired it does not run; a
reply reaches it; without a command the gate only waits.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from gate_stack import Stack
from procs import (
    ALICE,
    BOB,
    GENERAL,
    SIGNOFF,
)

from bot.ui import ids
from signoff.gate_cli import DENIED, EXPIRED
from storage import connect


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
    # The card is redrawn after the expiry the gate heard about, so it is waited for.
    await stack.sandbox.wait_for(
        lambda: "Expired" in str(stack.sandbox.workspace.message(GENERAL, card.ts).blocks),
        within=15,
    )


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
    # The card is redrawn after the decision the gate heard about, so it is waited for.
    await stack.sandbox.wait_for(
        lambda: (
            "Decided: Delete 3 stale volumes, 3 items" in str(ws.message(GENERAL, card.ts).blocks)
        ),  # type: ignore[union-attr]
        within=15,
    )


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


async def test_json_output_writes_bidirectional_controls_as_escapes(stack: Stack) -> None:
    """A terminal or log showing ``--json`` cannot reorder what the job sent: each
    bidirectional control is a JSON escape, read back by a parser as it was sent."""
    title = "Delete 42 stale volumes\u202e\u2066 of vol-b\u2069\u202c"
    gate = await stack.gate("--json", "--title", title, command=None)
    await stack.waiting(gate)
    await stack.click(await stack.card(), ids.APPROVE)
    out, err = await asyncio.wait_for(gate.communicate(), 30)
    assert gate.returncode == 0, err
    [decision] = out.decode().splitlines()
    assert r'"title":"Delete 42 stale volumes\u202e\u2066 of vol-b\u2069\u202c"' in decision
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", decision), decision
    assert json.loads(decision)["title"] == title
