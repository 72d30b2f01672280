"""The terminal example, driven through its stdin like a person would."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "cleanup_agent.py"


def run_example(answer: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        input=answer + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return completed.stdout


def files_left(output: str) -> str:
    match = re.search(r"Files left: (.*)", output)
    assert match, output
    return match.group(1)


def test_approving_deletes_only_the_old_files():
    output = run_example("y")
    assert "[approval needed] Delete files older than 5 days" in output
    assert "build.log" in output and "cache.tmp" in output
    assert files_left(output) == "today.txt"


def test_denying_deletes_nothing():
    output = run_example("n")
    assert files_left(output) == "build.log, cache.tmp, today.txt"


def test_trusting_for_the_run_deletes_and_asks_once():
    output = run_example("t")
    assert output.count("[approval needed]") == 1
    assert files_left(output) == "today.txt"
