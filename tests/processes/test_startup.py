"""A `signoff` process given a token Slack refuses stops at once with one line naming it,
and one started while Slack is out of reach still stops on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from procs import SIGNOFF, free_port

from sandbox import Sandbox


def _env(sandbox_api: str, **changes: str) -> dict[str, str]:
    return {
        **os.environ,
        "SLACK_SIGNING_SECRET": "s" * 32,
        "SIGNOFF_SLACK_API_URL": sandbox_api,
        "REDIS_URL": "redis://127.0.0.1:9/0",  # never reached: the tokens are checked first
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_PORT": str(free_port()),
        **changes,
    }


async def _run(*args: str, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(SIGNOFF), *args, env=env, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(60):
        _, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, err.decode()


@pytest.mark.parametrize("command", ["serve", "socket", "worker"])
async def test_a_bot_token_slack_refuses_stops_start_up_with_one_line(
    sandbox: Sandbox, command: str
) -> None:
    env = _env(sandbox.api_url, SLACK_BOT_TOKEN="xoxb-wrong", SLACK_APP_TOKEN=sandbox.app_token)
    code, err = await _run(command, env=env)
    assert code == 2, err
    assert err.splitlines()[-1].startswith(
        "signoff: SLACK_BOT_TOKEN: Slack refused it (invalid_auth); copy the Bot User OAuth"
    ), err
    assert "xoxb-wrong" not in err


async def test_an_app_token_slack_refuses_stops_start_up_with_one_line(sandbox: Sandbox) -> None:
    env = _env(sandbox.api_url, SLACK_BOT_TOKEN=sandbox.bot_token, SLACK_APP_TOKEN="xapp-wrong")
    code, err = await _run("socket", env=env)
    assert code == 2, err
    assert err.splitlines()[-1].startswith(
        "signoff: SLACK_APP_TOKEN: Slack refused it (invalid_auth)"
    ), err


async def test_socket_mode_started_while_slack_is_out_of_reach_warns_and_stops_on_sigterm(
    redis_url: str,
) -> None:
    env = _env(
        f"http://127.0.0.1:{free_port()}/api/",  # nothing listens there
        SLACK_BOT_TOKEN="xoxb-any",
        SLACK_APP_TOKEN="xapp-any",
        REDIS_URL=redis_url,
    )
    process = await asyncio.create_subprocess_exec(
        str(SIGNOFF), "socket", env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    seen, line = [], b""
    try:
        async with asyncio.timeout(60):
            while b"Failed to connect" not in line:
                line = await process.stderr.readline()
                assert line, b"".join(seen).decode()  # still running
                seen.append(line)
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            seen.append((await process.communicate())[1])
    assert process.returncode == 0
    logged = b"".join(seen).decode()
    assert "SLACK_APP_TOKEN not checked" in logged
    # Each attempt to connect is one warning line, not an error with a traceback.
    attempt = json.loads(line)
    assert attempt["level"] == "warning" and "error" not in attempt, attempt
    assert "Cannot connect to host" in attempt["event"], attempt
    assert "Traceback" not in logged, logged
