"""The README's example runs as printed."""

import json
import re
import subprocess
import sys
import textwrap
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


READERS_OWN = {"builder", "model", "delete_files", "make_cleanup_agent"}
"""Names the README's examples leave to the reader: their graph, model and tools."""


def test_every_readme_example_names_only_what_it_imports_or_leaves_to_the_reader(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    for n, block in enumerate(blocks):
        (tmp_path / f"example_{n}.py").write_text(textwrap.dedent(block))
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F821"]
    checked = subprocess.run(
        [*ruff, "--output-format", "json", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    undefined = {
        (Path(found["filename"]).name, found["message"].split("`")[1])
        for found in json.loads(checked.stdout)
    }
    assert {(example, name) for example, name in undefined if name not in READERS_OWN} == set()
    assert len(blocks) >= 5
