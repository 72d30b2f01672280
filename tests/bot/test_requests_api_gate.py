"""``signoff gate`` against a real Signoff server: it asks again when its check changed,
withdraws when stopped, and is refused, not unreachable, once its token is revoked."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes import Fault
from harness import ALICE, BOB, CAROL, CHANNEL
from requests_jobs import Jobs

import bot.api.requests as requests_api
import signoff
from bot.api.schemas import ReminderSettings
from bot.decisions.clicks import made_final
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from signoff import gate, gate_ask, gate_say, gate_wait
from signoff.gate_cli import CHECK_FAILED, DENIED, EXPIRED, REFUSED, WITHDRAWN


async def test_a_gate_asks_again_when_its_check_changed_after_a_reply(
    jobs: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reply is an answer the command runs on (``--allow-reply``): what it acts on
    changing after it asks again, as after an approval."""
    listing, ran = tmp_path / "listing", tmp_path / "ran"
    listing.write_text("vol-a\nvol-b\n")
    request = signoff.NewRequest(
        title="Delete volumes", channel=CHANNEL, approvers=[ALICE, BOB], allow_reply=True
    )
    gating = asyncio.create_task(
        gate._gate(
            signoff.Client(jobs.base, jobs.token),
            request,
            ["touch", str(ran)],
            check=f"cat {listing}",
        )
    )
    await jobs.bot.slack.wait_calls("chat.postMessage")
    listing.write_text("vol-a\nvol-c\n")  # what it acts on moves meanwhile
    await jobs.bot.click(ids.REPLY, jobs.value(), user=BOB)
    await jobs.bot.slack.wait_calls("views.open")
    status, _ = await jobs.bot.submit(ids.REPLY_VIEW, jobs.value(), user=BOB, text="only vol-a")
    assert status == 200
    await jobs.bot.slack.wait_calls("chat.postMessage", 2)  # asked again
    slack = jobs.bot.slack
    await slack.wait_for(
        lambda: any("Changed since" in str(u["blocks"]) for u in slack.called("chat.update"))
    )
    [marked] = [u for u in slack.called("chat.update") if "Changed since" in str(u["blocks"])]
    shown = str(marked["blocks"])
    assert "*Reply:* only vol-a" in shown
    # It says what happened: a reply, not an approval.
    assert f"Changed since it was answered by <@{BOB}>" in shown and "approved" not in shown
    assert "changed after the reply" in shown
    assert "changed since it was answered; asking again" in capsys.readouterr().err
    asked_again = str(slack.called("chat.postMessage")[1]["blocks"])
    assert "Changed since it was answered" in asked_again and "approved" not in asked_again
    again = jobs.bot.message_ts(-1)
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE, message_ts=again)
    assert await asyncio.wait_for(gating, 15) == 0
    assert ran.exists()


async def test_a_check_that_fails_asks_nobody_and_runs_nothing(jobs: Jobs, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    request = signoff.NewRequest(title="Delete volumes", channel=CHANNEL, approvers=[ALICE])
    client = signoff.Client(jobs.base, jobs.token)
    check = "echo cannot list >&2; exit 3"
    assert await gate._gate(client, request, ["touch", str(ran)], check=check) == CHECK_FAILED
    assert jobs.bot.slack.called("chat.postMessage") == [] and not ran.exists()


async def test_a_check_that_changes_after_every_approval_is_given_up_after_five(
    jobs: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    count, ran = tmp_path / "count", tmp_path / "ran"
    check = f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) | tee {count}"
    request = signoff.NewRequest(title="Delete volumes", channel=CHANNEL, approvers=[ALICE])
    client = signoff.Client(jobs.base, jobs.token)
    gating = asyncio.create_task(gate._gate(client, request, ["touch", str(ran)], check=check))
    for card in range(1, 6):
        await jobs.bot.slack.wait_calls("chat.postMessage", card)
        await jobs.bot.click(
            ids.APPROVE, jobs.value(), user=ALICE, message_ts=jobs.bot.message_ts(-1)
        )
    assert await asyncio.wait_for(gating, 15) == CHECK_FAILED
    assert not ran.exists() and len(jobs.bot.slack.called("chat.postMessage")) == 5
    assert "changed 5 times after approval; giving up" in capsys.readouterr().err


async def test_a_gate_asking_in_a_channel_its_client_may_not_post_to_is_refused(
    jobs: Jobs, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    request = signoff.NewRequest(title="Delete volumes", channel="C0ELSEWHERE", approvers=[ALICE])
    client = signoff.Client(jobs.base, jobs.token)
    assert await gate._gate(client, request, ["touch", str(ran)]) == REFUSED
    assert jobs.bot.slack.called("chat.postMessage") == [] and not ran.exists()


async def test_a_gate_whose_key_asked_for_another_request_is_refused_saying_so(
    jobs: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its --idempotency-key was used with another title: the card of that request is
    not this job's approval, so nothing runs, and the job is told to use another key."""
    status, _ = await jobs.ask(title="Rotate keys", idempotency_key="cleanup-2026-11-24")
    assert status == 201
    ran = tmp_path / "ran"
    request = signoff.NewRequest(
        title="Delete volumes",
        channel=CHANNEL,
        approvers=[ALICE],
        idempotency_key="cleanup-2026-11-24",
    )
    client = signoff.Client(jobs.base, jobs.token)
    assert await gate._gate(client, request, ["touch", str(ran)]) == REFUSED
    assert not ran.exists() and len(jobs.bot.slack.called("chat.postMessage")) == 1
    assert "this key was used for a request with another body" in capsys.readouterr().err


async def test_a_gate_stopped_while_it_checks_again_does_not_run_its_command(
    jobs: Jobs, tmp_path: Path
) -> None:
    count, rechecking, ran = tmp_path / "count", tmp_path / "rechecking", tmp_path / "ran"
    check = (
        f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}; "
        f'if [ "$n" -ge 1 ]; then touch {rechecking}; sleep 30; fi; echo vol-a'
    )
    request = signoff.NewRequest(title="Delete volumes", channel=CHANNEL, approvers=[ALICE])
    gating = asyncio.create_task(
        gate._gate(signoff.Client(jobs.base, jobs.token), request, ["touch", str(ran)], check=check)
    )
    await jobs.bot.slack.wait_calls("chat.postMessage")
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    async with asyncio.timeout(10):
        while True:
            if rechecking.exists():
                break
            await asyncio.sleep(0.01)  # the check is a shell command: poll the file it writes
    os.kill(os.getpid(), signal.SIGTERM)  # the job is stopped during the second check
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN  # without waiting for the check
    assert not ran.exists()


async def test_a_gate_stopped_while_its_request_is_posted_withdraws_it(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    posted, release = asyncio.Event(), asyncio.Event()
    post = requests_api.post_interrupt

    async def slow_answer(services: Any, record: Any) -> Any:
        answer = await post(services, record)
        posted.set()
        await release.wait()  # Slack took the card; the answer to the job is slow
        return answer

    stopped = asyncio.Event()
    stopped_while_asking = gate_ask._stopped_while_asking

    async def noted(*args: Any) -> Any:
        stopped.set()
        return await stopped_while_asking(*args)

    monkeypatch.setattr(requests_api, "post_interrupt", slow_answer)
    monkeypatch.setattr(gate_ask, "_stopped_while_asking", noted)
    request = signoff.NewRequest(title="Rotate", channel=CHANNEL, approvers=[ALICE])
    gating = asyncio.create_task(gate._gate(signoff.Client(jobs.base, jobs.token), request, []))
    await asyncio.wait_for(posted.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(stopped.wait(), 10)  # stopped before Signoff answered
    release.set()
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN
    record = await jobs.bot.services.storage.queries.get(jobs.bot.record_id(jobs.value()))
    assert record is not None and record.state == "cancelled"


async def test_a_gate_whose_token_is_revoked_while_it_waits_is_refused_not_unreachable(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_wait, "_RENEW", 0.1)  # the long-poll is renewed at once
    async with signoff.Client(jobs.base, jobs.token) as client:
        view = await client.create(
            signoff.NewRequest(title="Delete 42 stale volumes", channel=CHANNEL, approvers=[ALICE])
        )
        waiting = asyncio.create_task(gate_wait.wait(client, view, asyncio.Event()))
        assert await jobs.bot.services.storage.api_clients.revoke("nightly-cleanup")
        assert await asyncio.wait_for(waiting, 10) == REFUSED


async def test_a_waiting_gate_says_each_vote_reminder_and_escalation_as_it_happens(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_wait, "_RENEW", 0.1)  # the long-poll is renewed at once
    said: list[str] = []
    spoke = asyncio.Event()

    def say(text: str) -> None:
        said.append(text.removeprefix("signoff gate: "))
        spoke.set()

    async def until_said(line: str) -> None:
        async with asyncio.timeout(10):
            while line not in said:
                spoke.clear()
                await spoke.wait()

    monkeypatch.setattr(gate_say, "say", say)
    jobs = await jobs.as_client("escalating", (CHANNEL, "C0NYC"))
    ask = signoff.NewRequest(
        title="Delete 42 stale volumes",
        channel=CHANNEL,
        approvers=[ALICE, BOB],
        min_approvals=2,
        expires_in=3600,
        on_expiry="escalate",
        escalate_channel="C0NYC",
        escalate_to=[CAROL],
        reminders=ReminderSettings(every=60, limit=1, start_hour=0, end_hour=24),
    )
    scheduler = Scheduler(jobs.bot.services)
    async with signoff.Client(jobs.base, jobs.token) as client:
        view = await client.create(ask)
        deciding = asyncio.create_task(gate_wait._decision(client, view))
        await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
        await until_said("1 of 2 approvals")
        # An expiry waits for a click the decider is not done with (its card being drawn).
        await jobs.bot.clicks_done()
        jobs.bot.clock.advance(timedelta(seconds=61))
        await scheduler.tick()
        await until_said("reminder 1 sent to the approvers")
        jobs.bot.clock.advance(timedelta(seconds=3600))
        await scheduler.tick()
        await until_said("not decided in time; escalated")
        assert not deciding.done()
        deciding.cancel()
    assert said == [
        "1 of 2 approvals",
        "reminder 1 sent to the approvers",
        "not decided in time; escalated",
    ]


@pytest.mark.parametrize(("outcome", "code"), [("denied", DENIED), ("expired", EXPIRED)])
async def test_a_retry_with_the_key_of_a_request_that_ended_exits_at_once_asking_nothing(
    jobs: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str], outcome: str, code: int
) -> None:
    status, made = await jobs.ask(expires_in=60, idempotency_key="cleanup-2026-11-24")
    assert status == 201, made
    if outcome == "denied":
        await jobs.bot.decide("reject", jobs.value(), user=ALICE)
    else:
        jobs.bot.clock.advance(timedelta(seconds=61))
        await Scheduler(jobs.bot.services).tick()
    _, ended = await jobs.get(made["status_url"] + "?wait=10")
    assert ended["status"] == outcome, ended
    ran = tmp_path / "ran"
    retry = signoff.NewRequest(
        title="Delete 42 stale volumes",
        channel=CHANNEL,
        approvers=[ALICE, BOB],
        expires_in=60,
        idempotency_key="cleanup-2026-11-24",
    )
    client = signoff.Client(jobs.base, jobs.token)
    assert await asyncio.wait_for(gate._gate(client, retry, ["touch", str(ran)]), 10) == code
    assert not ran.exists() and len(jobs.bot.slack.called("chat.postMessage")) == 1
    assert f"{outcome} earlier; give a new key to ask again" in capsys.readouterr().err


async def test_the_command_is_told_its_request_and_the_quorums_last_vote_not_the_token(
    jobs: Jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_TOKEN", jobs.token)  # as the gate's own environment has it
    told = tmp_path / "told"
    shown = '"$SIGNOFF_REQUEST_ID" "$SIGNOFF_DECIDED_BY" "${SIGNOFF_TOKEN-unset}"'
    command = ["sh", "-c", f"printf '%s %s %s' {shown} > {told}"]
    quorum = signoff.NewRequest(
        title="Rotate", channel=CHANNEL, approvers=[ALICE, BOB], min_approvals=2
    )
    gating = asyncio.create_task(gate._gate(signoff.Client(jobs.base, jobs.token), quorum, command))
    await jobs.bot.slack.wait_calls("chat.postMessage")
    value = jobs.value()
    await jobs.bot.click(ids.APPROVE, value, user=ALICE)
    await jobs.bot.click(ids.APPROVE, value, user=BOB)
    assert await asyncio.wait_for(gating, 10) == 0
    request_id = value.split("/")[0]
    assert told.read_text() == f"{request_id} {BOB} unset"


async def test_a_command_approved_by_default_is_told_nobody_decided(
    jobs: Jobs, tmp_path: Path
) -> None:
    asked = {"expires_in": 60, "if_nobody_decides": "approve", "idempotency_key": "rotate-1"}
    status, made = await jobs.ask(**asked)  # its card is posted: it may be approved by default
    assert status == 201, made
    told = tmp_path / "decided_by"
    command = ["sh", "-c", f'printf "[%s]" "$SIGNOFF_DECIDED_BY" > {told}']
    same = signoff.NewRequest(
        title="Delete 42 stale volumes", channel=CHANNEL, approvers=[ALICE, BOB], **asked
    )
    gating = asyncio.create_task(gate._gate(signoff.Client(jobs.base, jobs.token), same, command))
    jobs.bot.clock.advance(timedelta(seconds=61))
    await Scheduler(jobs.bot.services, made_final=made_final).tick()
    assert await asyncio.wait_for(gating, 10) == 0
    assert told.read_text() == "[]"


async def test_a_gate_open_to_the_channel_says_so_beside_its_approvers(
    jobs: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "who may decide: bob" when anyone in the channel may, as the card says."""
    ran = tmp_path / "ran"
    request = signoff.NewRequest(
        title="Rotate", channel=CHANNEL, approvers=[BOB], anyone_in_channel=True
    )
    client = signoff.Client(jobs.base, jobs.token)
    gating = asyncio.create_task(gate._gate(client, request, ["touch", str(ran)]))
    await jobs.bot.slack.wait_calls("chat.postMessage")
    assert "anyone in this channel" in str(jobs.card()["blocks"])
    value = jobs.value()
    await jobs.bot.click(ids.APPROVE, value, user=CAROL)  # a member, not an approver
    assert await asyncio.wait_for(gating, 10) == 0 and ran.exists()
    err = capsys.readouterr().err.splitlines()
    assert "signoff gate: who may decide: u0bob (U0BOB), anyone in the channel" in err
    assert "signoff gate: approved by u0carol (U0CAROL)" in err
    _, view = await jobs.get(f"/api/requests/{value.split('/')[0]}")
    assert view["anyone_in_channel"] is True and view["approvers"] == [BOB]


async def test_a_card_in_a_channel_slack_does_not_know_has_the_gate_check_its_id(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slack's ``channel_not_found``: a mistyped id as likely as a missing invitation."""
    refused = Fault(status=200, body={"ok": False, "error": "channel_not_found"})
    jobs.bot.slack.faults["chat.postMessage"].append(refused)
    waiting, wait = asyncio.Event(), gate_ask.wait

    async def noted(*args: Any) -> Any:
        waiting.set()
        return await wait(*args)

    monkeypatch.setattr(gate_ask, "wait", noted)
    request = signoff.NewRequest(title="Rotate", channel=CHANNEL, approvers=[ALICE])
    gating = asyncio.create_task(gate._gate(signoff.Client(jobs.base, jobs.token), request, []))
    await asyncio.wait_for(waiting.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN
    assert (
        "(Slack answered channel_not_found), and Signoff keeps trying "
        f"(is {CHANNEL} the channel's id, and the app a member of it?)"
    ) in capsys.readouterr().err
