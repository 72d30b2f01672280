"""The benchmarks' command lines: an argument one does not take (the chaos bench: a
scenario it does not have), or --help, is answered at once with its usage, never a
traceback, and starts no server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_unknown_scenario_is_a_usage_error_naming_the_scenarios() -> None:
    done = _bench("bench.chaos", "kil")
    assert done.returncode == 2
    assert "no scenario kil; choose from concurrent, kill," in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_help_lists_the_scenarios() -> None:
    done = _bench("bench.chaos", "--help")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stdout.startswith("usage: python -m bench.chaos [-h] [SCENARIO ...]")
    assert "``ratelimit``: the first card post answered 429" in done.stdout


BENCHES = ["bench.runtime", "bench.storage", "bench.clicks", "bench.gate"]


@pytest.mark.parametrize("module", BENCHES)
def test_help_tells_what_a_benchmark_measures(module: str) -> None:
    done = _bench(module, "--help")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stdout.startswith(f"usage: python -m {module} [-h]\n")
    assert "one JSON object" in done.stdout  # its docstring: what it prints


@pytest.mark.parametrize("module", BENCHES)
def test_an_argument_a_benchmark_does_not_take_is_a_usage_error(module: str) -> None:
    done = _bench(module, "--rounds", "5")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"usage: python -m {module} [-h]\n"
        f"python -m {module}: error: unrecognized arguments: --rounds 5\n"
    )
