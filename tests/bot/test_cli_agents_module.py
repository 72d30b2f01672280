"""The agents module a ``signoff`` process loads (``--agents`` or ``SIGNOFF_AGENTS``), run
as a real process: where it is found, and the one line a module that fails to load stops
startup with, naming where it was given."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from cli_procs import ROOT, bot_env, finished_signoff
from fakes import FakeSlack

RUN = ("run", "cleanup", "--channel", "C0OPS", "--input", "tidy", "--agents", "cleanup_agents")


@pytest.fixture
def env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    return bot_env(slack, redis_url, key_prefix)


async def test_the_agents_module_is_found_in_the_working_directory(
    slack: FakeSlack, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "my_agents.py").write_text("from cleanup_agents import agents\n")
    process = await asyncio.create_subprocess_exec(
        Path(sys.executable).parent / "signoff",  # the installed command, as a user runs it
        *RUN[:-1],
        "my_agents",
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'bot'}", **env},
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert len(slack.called("chat.postMessage")) == 1


POLICY = "from datetime import timedelta\nfrom signoff import AgentSpec, Policy\n"


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("import os\nagents = [undefined]\n", "at line 2: NameError: name 'undefined' is"),
        ("agents = [\n", "SyntaxError: '[' was never closed (broken_agents.py, line 1)"),
        (
            POLICY + "agents = [\n  AgentSpec(\n    name='tidy',\n    build=print,\n"
            "    policy=Policy(users=('U0A',), min_approvals=0),\n  ),\n]\n",
            "at line 7: PolicyError: min_approvals must be at least 1, got 0",
        ),
        (
            POLICY + "agents = [AgentSpec(name='tidy', build=print, "
            "policy=Policy(users=('U0A',)), started_by=('alice',))]\n",
            "at line 3: PolicyError: agent 'tidy': started_by: 'alice' is not a user or",
        ),
        ("raise ValueError('no API key')\n", "at line 1: ValueError: no API key"),
    ],
)
async def test_an_agents_module_that_fails_as_it_loads_stops_startup_with_one_line(
    env: dict[str, str], tmp_path: Path, source: str, said: str
) -> None:
    (tmp_path / "broken_agents.py").write_text(source)
    path = f"{ROOT}:{ROOT / 'tests' / 'bot'}:{tmp_path}"
    args = (*RUN[:-1], "broken_agents")
    code, out, err = await finished_signoff(*args, env={**env, "PYTHONPATH": path})
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("signoff: --agents: 'broken_agents' failed to load"), err
    assert said in err, err


async def test_an_agents_module_given_by_the_setting_is_named_by_the_setting(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The line names where the module was given: the setting here, ``--agents`` above,
    which overrides a setting that may name another module."""
    (tmp_path / "broken_agents.py").write_text("raise ValueError('no API key')\n")
    path = f"{ROOT}:{ROOT / 'tests' / 'bot'}:{tmp_path}"
    given = {**env, "PYTHONPATH": path, "SIGNOFF_AGENTS": "broken_agents"}
    code, out, err = await finished_signoff(*RUN[:-2], env=given)
    assert code == 2 and out == "", err
    assert err == (
        "signoff: SIGNOFF_AGENTS: 'broken_agents' failed to load at line 1: "
        "ValueError: no API key\n"
    ), err
