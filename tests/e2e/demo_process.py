"""``python -m demo`` as a user runs it: a subprocess on free ports, stopped with Ctrl-C."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DEMO = (sys.executable, "-m", "demo")
RUN_DEMO = (str(ROOT / "run"), "demo")  # sets up first, then execs the same python -m demo
START_SECONDS = 30.0
STOP_SECONDS = 10.0


@dataclass(kw_only=True)
class DemoProcess:
    """A running demo: its page address, data directory and how long it took to start.

    Its stderr goes to a file beside the data directory, so a chatty run never blocks on
    a full pipe.
    """

    process: subprocess.Popen[str]
    url: str
    data_dir: Path
    stderr: Path
    started_in: float

    @classmethod
    def start(cls, data_dir: Path, *, command: tuple[str, ...] = PYTHON_DEMO) -> DemoProcess:
        """Start the demo and return once it has printed its address."""
        began = time.monotonic()
        stderr = data_dir.with_name(data_dir.name + ".stderr")
        with stderr.open("w") as sink:
            options = ["--no-browser", "--port", "0", "--data-dir", str(data_dir)]
            process = subprocess.Popen(
                [*command, *options],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            url = _read_url(process, began + START_SECONDS, stderr)
        except BaseException:
            process.kill()
            process.wait()
            raise
        elapsed = time.monotonic() - began
        return cls(process=process, url=url, data_dir=data_dir, stderr=stderr, started_in=elapsed)

    def stop(self) -> tuple[int, float, str]:
        """Ctrl-C it; returns the exit code, how long it took to exit, and its stderr."""
        began = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise AssertionError(
                f"the demo did not exit within {STOP_SECONDS}s of Ctrl-C: {self.stderr.read_text()}"
            ) from None
        return self.process.returncode, time.monotonic() - began, self.stderr.read_text()


def _read_url(process: subprocess.Popen[str], deadline: float, stderr: Path) -> str:
    """The first http:// address the demo prints; its stderr if it exits first."""
    assert process.stdout is not None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([process.stdout], [], [], remaining)[0]:
            raise AssertionError(f"the demo printed no address within {START_SECONDS}s")
        line = process.stdout.readline()
        if not line:
            process.wait()
            raise AssertionError(f"the demo exited with {process.returncode}: {stderr.read_text()}")
        found = re.search(r"https?://\S+", line)
        if found:
            return found.group(0)
