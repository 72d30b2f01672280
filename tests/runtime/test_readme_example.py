"""The README's example runs as printed."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"


def test_the_readme_example_runs_and_prints_the_final_message():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert code, "the README has a Python example"
    completed = subprocess.run(
        [sys.executable, "-c", code.group(1)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=README.parent,
    )
    assert completed.stdout.strip() == "Done."
