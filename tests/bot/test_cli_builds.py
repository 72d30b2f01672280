"""Agents are built as ``signoff`` starts: a bad ``interrupt_on`` stops it, a build of the
agent's own that fails is logged and tried again at first use."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_procs import FAILING_BUILD, ROOT, bot_env, json_worker, logged, start_signoff
from fakes import FakeSlack


@pytest.fixture
def env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    return bot_env(slack, redis_url, key_prefix)


@pytest.mark.parametrize("command", ["serve", "worker"])
async def test_a_bad_interrupt_on_stops_the_bot_starting_in_one_line(
    env: dict[str, str], tmp_path: Path, command: str
) -> None:
    """Found as the process starts, not by the first run, click or resume of the agent."""
    body = (
        "return Agent(model=OneToolModel('delete_files', {}), tools=[delete_files], "
        "interrupt_on={'delete_file': True}, session_store=store)"
    )
    (tmp_path / "failing_agents.py").write_text(FAILING_BUILD.format(body))
    path = f"{ROOT}:{ROOT / 'tests' / 'bot'}:{tmp_path}"
    http = {"SLACK_SIGNING_SECRET": "s" * 32, "SIGNOFF_HOST": "127.0.0.1", "SIGNOFF_PORT": "0"}
    process = await start_signoff(
        command,
        "--agents",
        "failing_agents",
        env={**env, **http, "PYTHONPATH": path},
        stdout=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2 and out == b"", err
    assert err.decode() == (
        "signoff: agent 'cleanup': interrupt_on names tools this agent lacks: ['delete_file']; "
        "its tools are ['delete_files']\n"
    ), err


async def test_an_agent_whose_own_build_fails_is_logged_as_the_worker_starts(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A missing API key may be set later: the worker starts, saying which agent fails."""
    (tmp_path / "failing_agents.py").write_text(FAILING_BUILD.format("raise ValueError('no key')"))
    path = f"{ROOT}:{ROOT / 'tests' / 'bot'}:{tmp_path}"
    process = await json_worker({**env, "PYTHONPATH": path}, "--agents", "failing_agents")
    try:
        said = await logged(process, "its runs fail", "the worker stopped as it started")
        assert said == (
            "agent 'cleanup': build() raised ValueError: no key; its runs fail until it builds"
        )
        await logged(process, "running at nice", "the worker stopped before its loops ran")
    finally:
        process.terminate()
        await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0
