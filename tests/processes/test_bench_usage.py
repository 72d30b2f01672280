"""The chaos bench's command line: a scenario it does not have, or --help, is answered
at once with its usage, never a traceback, and starts no server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _chaos(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.chaos", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_unknown_scenario_is_a_usage_error_naming_the_scenarios() -> None:
    done = _chaos("kil")
    assert done.returncode == 2
    assert "no scenario kil; choose from concurrent, kill," in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_help_lists_the_scenarios() -> None:
    done = _chaos("--help")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stdout.startswith("usage: python -m bench.chaos [-h] [SCENARIO ...]")
    assert "``ratelimit``: the first card post answered 429" in done.stdout
