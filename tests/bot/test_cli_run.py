"""``signoff run`` as a real process: how the run stopped is its exit status too."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_procs import ROOT, bot_env, finished_signoff
from fakes import FakeSlack
from test_cli import RUN


@pytest.fixture
def env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    return bot_env(slack, redis_url, key_prefix)


FAILING_MODEL = (
    "from agent_runtime import Agent\nfrom cleanup_agents import delete_files\n"
    "from signoff import AgentSpec, Policy\n\n"
    "class Down:\n    async def generate(self, request):\n"
    "        raise ConnectionError('provider down')\n\n"
    "def build(store):\n    return Agent(model=Down(), tools=[delete_files], "
    "session_store=store, name='cleanup')\n\n"
    "agents = [AgentSpec(name='cleanup', build=build, policy=Policy(users=('U0ALICE',)))]\n"
)


async def test_run_that_fails_says_so_and_exits_1(env: dict[str, str], tmp_path: Path) -> None:
    """A run ending in an error is a failure to the shell too, not exit 0."""
    (tmp_path / "down_agents.py").write_text(FAILING_MODEL)
    path = f"{ROOT}:{ROOT / 'tests' / 'bot'}:{tmp_path}"
    code, out, err = await finished_signoff(
        *RUN[:-1], "down_agents", env={**env, "PYTHONPATH": path}
    )
    assert code == 1, (out, err)
    assert out.startswith("error: ") and "provider down" in out, out
