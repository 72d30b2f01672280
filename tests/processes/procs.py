"""Real `signoff` processes for the tests: their environment, start, health and log.

The processes run the installed console script against a sandbox and an embedded Redis;
``process_agents`` (on their PYTHONPATH) declares the agents they run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp

from sandbox import Sandbox

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
GENERAL = "C0GENERAL"
ALICE, BOB = "U0ALICE", "U0BOB"
SIGNOFF = Path(sys.executable).parent / "signoff"  # the installed console script
WORKERS_RUNNING = "and the scheduler are running"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def signoff_env(sandbox: Sandbox, redis_url: str, marks: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}",
        "SLACK_BOT_TOKEN": sandbox.bot_token,
        "SLACK_SIGNING_SECRET": sandbox.signing_secret,
        "SIGNOFF_SLACK_API_URL": sandbox.api_url,
        "REDIS_URL": redis_url,
        "SIGNOFF_AGENTS": "process_agents",
        "SIGNOFF_CHANNEL": GENERAL,
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_TEST_MARKS": str(marks),
        # Debug logs include every Web API request slack-sdk sends: tokens must not.
        "SIGNOFF_LOG_LEVEL": "DEBUG",
        # A worker in the idle scheduling class waits while anything else on the host
        # wants a CPU; these tests are about what it does, not when (tests/bot/test_cli.py
        # checks its priority).
        "SIGNOFF_WORKER_NICE": "0",
    }


def start_signoff(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([str(SIGNOFF), *args], env=env, stdout=out, stderr=out)


async def exit_status(process: subprocess.Popen[bytes], *, within: float = 15) -> int:
    """``process``'s exit status, waited for off the event loop: the sandbox on it answers
    what the process still sends Slack as it stops (a card it is drawing)."""
    return await asyncio.to_thread(process.wait, within)


async def until_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    async with aiohttp.ClientSession() as http, asyncio.timeout(30):
        while True:
            assert process.poll() is None, f"the bot exited while starting; see {log}"
            try:
                async with http.get(url) as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)  # the process is booting: poll its health endpoint


async def until_logged(log: Path, text: str, *, times: int) -> None:
    """Wait until ``text`` appears ``times`` times in the processes' shared log."""
    async with asyncio.timeout(30):
        while True:
            if (await asyncio.to_thread(log.read_text)).count(text) >= times:
                return
            await asyncio.sleep(0.05)  # the processes are booting: poll their log
