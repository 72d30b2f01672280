"""``python -m demo`` and ``./run demo`` as a user runs them, driven over the sandbox's HTTP
interface.

One approval goes through to the end; Ctrl-C stops everything at once with exit code 0;
a restart on the same data directory still shows what was pending, and it can be approved.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
from demo_process import ROOT, RUN_DEMO, DemoProcess

from sandbox import SandboxClient
from signoff import webhooks

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"
GENERAL, OPS = "C0GENERAL", "C0OPS"
APPROVE = "signoff.approve"
TRUST = "signoff.trust"
REVOKE_TRUST = "signoff.revoke_trust"
State = dict[str, Any]

GATED_OUTPUT = "approved by U0ALICE: a real job would now clear files older than 30 days\n"


def _button(message: State, action_id: str) -> State | None:
    for block in message.get("blocks") or []:
        for element in block.get("elements") or []:
            if block["type"] == "actions" and element.get("action_id") == action_id:
                return {"block_id": block["block_id"], "action_id": action_id}
    return None


def _headed(header: str, *, pending: bool) -> Callable[[State], State | None]:
    """A probe for the latest message under ``header``, with or without its buttons."""

    def probe(state: State) -> State | None:
        for message in reversed(state.get("messages") or []):
            heads = [
                b["text"]["text"] for b in message.get("blocks") or [] if b["type"] == "header"
            ]
            if any(header in h for h in heads) and bool(_button(message, APPROVE)) == pending:
                return message
        return None

    return probe


def _thread_says(text: str) -> Callable[[State], bool]:
    return lambda state: any(text in m["text"] for m in state.get("thread") or [])


async def _approve(slack: SandboxClient, user: str, channel: str, message: State) -> State:
    button = _button(message, APPROVE)
    assert button is not None, message
    return await slack.click(user, channel=channel, message_ts=message["ts"], **button)


async def _start(data_dir: Path) -> DemoProcess:
    return await asyncio.to_thread(DemoProcess.start, data_dir)


async def _stop(demo: DemoProcess) -> float:
    code, seconds, stderr = await asyncio.to_thread(demo.stop)
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert f"What was pending is kept in {demo.data_dir}" in stderr
    return seconds


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


async def test_a_second_demo_on_the_same_data_dir_refuses_to_start(tmp_path: Path) -> None:
    demo = await _start(tmp_path / "demo")
    second = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "demo", "--no-browser", "--data-dir", str(demo.data_dir)),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await second.communicate()
    assert second.returncode == 2
    assert f"another demo is running on {demo.data_dir}" in stderr.decode()
    await _stop(demo)


async def test_run_demo_answers_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    installed, project = ROOT / ".venv" / ".installed", ROOT / "pyproject.toml"
    assert installed.exists() and installed.stat().st_mtime >= project.stat().st_mtime, (
        "pyproject.toml changed since .venv was set up, so ./run would reinstall before the"
        " demo; a test never installs: run ./run test, which sets up first"
    )
    # Typed in another directory, with a --data-dir relative to it.
    demo = await asyncio.to_thread(DemoProcess.start, Path("demo"), command=RUN_DEMO, cwd=tmp_path)
    assert f"  state in {tmp_path / 'demo'}; Ctrl-C stops it" in demo.printed
    # Without SIGNOFF_WEBHOOK_ALLOW too: a receiver on https needs no allowing.
    assert any(
        line.startswith("  The demo job's webhooks are signed with ") for line in demo.printed
    )
    async with aiohttp.ClientSession() as http:
        async with http.get(demo.url) as page:
            assert page.status == 200 and "acting-as" in await page.text()
        async with http.get(demo.url + "ui/workspace") as workspace:
            assert (await workspace.json())["app"]["commands"] == ["/signoff"]
    code, took, said = await asyncio.to_thread(demo.stop)
    assert code == 0 and took < 5.0, said
    assert f"./run demo --data-dir {tmp_path / 'demo'} shows it again" in said


CLEAR_CARD = _headed("Approval needed: Clear the demo", pending=True)
"""The card of the demo's gate command, still waiting."""


async def _run_gate(demo: DemoProcess) -> asyncio.subprocess.Process:
    """The gate command the demo printed, run as a person pastes it into a shell."""
    return await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        demo.gate_command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_the_printed_gate_command_runs_a_shell_job_once_approved(tmp_path: Path) -> None:
    demo = await _start(tmp_path / "the demo")  # a space its printed commands must quote
    gate = await _run_gate(demo)
    async with SandboxClient(demo.url) as slack:
        card = await slack.wait_for(ALICE, CLEAR_CARD, channel=OPS)
        await _approve(slack, ALICE, OPS, card)
        out, err = await asyncio.wait_for(gate.communicate(), 30)
        assert gate.returncode == 0, err
        assert out.decode() == GATED_OUTPUT
        await slack.wait_for(
            ALICE,
            _thread_says("Clear the demo scratch files: succeeded"),
            channel=OPS,
            thread=card["ts"],
        )
    # The commands the demo printed, pasted into a shell without signoff on its PATH, read
    # the Redis its job's client and decisions are in.
    env = {"PATH": "/usr/bin:/bin"}
    audit_command, tokens_command = demo.signoff_commands
    assert audit_command.startswith(f"REDIS_URL={shlex.quote(demo.redis_url)} ")
    tokens = await asyncio.to_thread(
        subprocess.run, ["sh", "-c", tokens_command], env=env, capture_output=True, timeout=30
    )
    assert tokens.returncode == 0 and "demo-job" in tokens.stdout.decode(), tokens
    audit = await asyncio.to_thread(
        subprocess.run,
        ["sh", "-c", f"{audit_command} --user {ALICE}"],
        env=env,
        capture_output=True,
        timeout=30,
    )
    assert '"event": "approved"' in audit.stdout.decode(), audit
    await _stop(demo)


async def test_a_gate_waiting_through_a_demo_restart_still_gets_its_answer(
    tmp_path: Path,
) -> None:
    demo = await _start(tmp_path / "demo")
    gate = await _run_gate(demo)
    async with SandboxClient(demo.url) as slack:
        await slack.wait_for(ALICE, CLEAR_CARD, channel=OPS)
    await _stop(demo)
    again = await _start(demo.data_dir)
    assert again.gate_command == demo.gate_command  # the same API address and token
    async with SandboxClient(again.url) as slack:
        card = await slack.wait_for(ALICE, CLEAR_CARD, channel=OPS)
        await _approve(slack, ALICE, OPS, card)
        out, err = await asyncio.wait_for(gate.communicate(), 60)
    assert gate.returncode == 0, err
    assert out.decode() == GATED_OUTPUT
    await _stop(again)


API_TOKEN = "demo-admin-" + "x" * 24


async def test_the_demo_reads_the_api_token_and_the_webhook_hosts_from_the_environment(
    tmp_path: Path,
) -> None:
    received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        await received.put({"body": body, "headers": dict(request.headers)})
        return web.Response()

    app = web.Application()
    app.router.add_post("/hook", hook)
    receiver = TestServer(app, host="127.0.0.1", port=0)
    await receiver.start_server()
    settings = {
        "SIGNOFF_WEBHOOK_ALLOW": f"127.0.0.1:{receiver.port}",
        "SIGNOFF_API_TOKEN": API_TOKEN,
    }
    demo = await asyncio.to_thread(DemoProcess.start, tmp_path / "demo", env=settings)
    env = dict(part.split("=", 1) for part in demo.gate_command.split()[:2])
    admin = {"Authorization": f"Bearer {API_TOKEN}"}
    async with (
        aiohttp.ClientSession(headers=admin) as http,
        http.get(env["SIGNOFF_URL"] + "/agui/file-cleanup") as agui,
    ):
        assert agui.status == 200, await agui.text()
    headers = {"Authorization": f"Bearer {env['SIGNOFF_TOKEN']}"}
    body = {
        "title": "Rotate the demo keys",
        "channel": OPS,
        "approvers": [ALICE],
        "callback_url": f"http://127.0.0.1:{receiver.port}/hook",
    }
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.post(env["SIGNOFF_URL"] + "/api/requests", json=body) as made:
            assert made.status == 201, await made.text()
            request_id = (await made.json())["id"]
        withdraw = f"{env['SIGNOFF_URL']}/api/requests/{request_id}/withdraw"
        async with http.post(withdraw, json={"reason": "not needed"}) as withdrawn:
            assert withdrawn.status == 200, await withdrawn.text()
    delivery = await asyncio.wait_for(received.get(), 30)
    event = json.loads(delivery["body"])
    assert event["event"] == "request.withdrawn" and event["request"]["id"] == request_id
    # The demo printed the secret its job's webhooks are signed with: a receiver checks them.
    [said] = [line for line in demo.printed if "webhooks are signed with" in line]
    assert webhooks.verify(delivery["body"], delivery["headers"], said.split()[-1])
    await _stop(demo)
    await receiver.close()


def test_run_demo_help_answers_before_anything_is_installed(tmp_path: Path) -> None:
    """A fresh clone: no virtualenv yet. ``--help`` must not install the world first; the
    system's Python (no Signoff dependencies) answers it."""
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "demo", clone / "demo")
    shutil.copy2(ROOT / "run", clone / "run")
    answer = subprocess.run(
        ["bash", str(clone / "run"), "demo", "--help"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.startswith("usage: ./run demo")
    assert "--port" in answer.stdout
    assert not (clone / ".venv").exists()


def test_run_refuses_a_mistyped_option_and_answers_help_before_anything_is_installed(
    tmp_path: Path,
) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "demo", clone / "demo")
    shutil.copy2(ROOT / "run", clone / "run")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(clone / "run"), *args],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
        )

    mistyped = run("demo", "--prot", "3100")
    assert mistyped.returncode == 2 and "unrecognized arguments: --prot" in mistyped.stderr
    helped = run("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: ./run demo"), helped
    assert not (clone / ".venv").exists()


def test_a_port_out_of_range_is_a_usage_error() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "demo", "--port", "99999"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert answer.returncode == 2, answer.stderr
    assert "--port: '99999' is not a port: give 0 to 65535" in answer.stderr
    assert "Traceback" not in answer.stderr


def test_a_port_in_use_is_told_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = ["--no-browser", "--port", str(port), "--data-dir", str(tmp_path / "demo")]
        answer = subprocess.run(
            [sys.executable, "-m", "demo", *options],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert answer.returncode == 2, answer.stderr
    assert answer.stderr == (
        f"demo: port {port} is in use: pass another --port, or leave --port out for a free one\n"
    )
