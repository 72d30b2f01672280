"""The ``signoff`` command line run as a real process, shared by the CLI test files."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from fakes import BOT_TOKEN, FakeSlack

ROOT = Path(__file__).resolve().parents[2]
FAILING_BUILD = (
    "from agent_runtime import Agent\nfrom cleanup_agents import delete_files\n"
    "from fakes import OneToolModel\nfrom signoff import AgentSpec, Policy\n\n"
    "def build(store):\n    {}\n\n"
    "agents = [AgentSpec(name='cleanup', build=build, policy=Policy(users=('U0ALICE',)))]\n"
)
"""An agents module whose one agent's build runs the line it is formatted with."""
MAIN = "import sys; from bot.process.cli import main; raise SystemExit(main(sys.argv[1:]))"


def bot_env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    """Settings for a bot talking to the fake Slack and the test Redis."""
    return {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SIGNOFF_SLACK_API_URL": slack.api_url,
        "REDIS_URL": redis_url,
        "SIGNOFF_REDIS_PREFIX": key_prefix,
    }


async def start_signoff(
    *args: str, env: dict[str, str], stdout: int | None = None
) -> asyncio.subprocess.Process:
    """``signoff ARGS`` with ``env`` over ours, its stderr piped (and ``stdout`` if asked)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        MAIN,
        *args,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'bot'}", **env},
        stdout=stdout,
        stderr=asyncio.subprocess.PIPE,
    )


async def finished_signoff(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """``signoff ARGS`` run to its end: its exit status, stdout and stderr."""
    process = await start_signoff(*args, env=env, stdout=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def json_worker(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    """``signoff worker`` at its own priority, logging JSON lines on its stderr."""
    return await start_signoff(
        "worker", *args, env={**env, "SIGNOFF_WORKER_NICE": "0", "SIGNOFF_LOG_FORMAT": "json"}
    )


async def logged(process: asyncio.subprocess.Process, text: str, died: str) -> str:
    """The first event ``process`` logs holding ``text``; fails with ``died`` if it stops."""
    assert process.stderr is not None
    while True:
        line = await asyncio.wait_for(process.stderr.readline(), 60)
        assert line, died
        event = str(json.loads(line)["event"])
        if text in event:
            return event
