"""`sandbox` stands alone: it is useful for testing any Bolt app, so it never imports Signoff."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIGNOFF_PACKAGES = ("bot", "demo", "storage", "agent_runtime", "signoff")
# Import every sandbox module (its __main__ included) in a fresh interpreter, then list
# what got imported along the way.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
import sandbox
for module in pkgutil.walk_packages(sandbox.__path__, "sandbox."):
    importlib.import_module(module.name)
print(json.dumps(sorted(sys.modules)))
"""


def test_importing_sandbox_never_imports_signoff_packages() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = json.loads(done.stdout)
    assert "sandbox.server" in modules and "sandbox.__main__" in modules
    leaked = [m for m in modules if m.split(".")[0] in SIGNOFF_PACKAGES]
    assert leaked == [], f"sandbox imported {leaked}"
