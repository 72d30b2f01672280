"""The commands the demo prints, run as a person pastes them into a shell (its gate, across
a restart too, and `signoff audit`), and the API token and webhook hosts it reads."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
from demo_process import DemoProcess
from demo_users import ALICE, OPS
from demo_users import approve as _approve
from demo_users import headed as _headed
from demo_users import start_demo as _start
from demo_users import stop_demo as _stop
from demo_users import thread_says as _thread_says

from sandbox import SandboxClient
from signoff import webhooks

GATED_OUTPUT = "approved by U0ALICE: a real job would now clear files older than 30 days\n"


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
