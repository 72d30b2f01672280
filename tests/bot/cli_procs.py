"""The ``signoff`` command line run as a real process, shared by the CLI test files."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from fakes import BOT_TOKEN, FakeSlack

ROOT = Path(__file__).resolve().parents[2]
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
