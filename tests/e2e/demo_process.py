"""``python -m demo`` as a user runs it: a subprocess on free ports, stopped with Ctrl-C.
One that will not stop is killed with every process it started (its Redis too)."""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
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

    process: subprocess.Popen[bytes]
    url: str
    gate_command: str
    redis_url: str
    """The ``REDIS_URL`` of the commands it printed, as a shell reads it."""
    printed: tuple[str, ...]
    """Every line it printed up to its last ready-to-paste command."""
    signoff_commands: tuple[str, ...]
    """The ``signoff audit`` and ``signoff token list`` commands it printed."""
    data_dir: Path
    stderr: Path
    started_in: float

    @classmethod
    def start(
        cls,
        data_dir: Path,
        *,
        command: tuple[str, ...] = PYTHON_DEMO,
        env: dict[str, str] | None = None,
        cwd: Path = ROOT,
    ) -> DemoProcess:
        """Start the demo in ``cwd`` (``data_dir`` may be relative to it) and return once it
        has printed its address."""
        began = time.monotonic()
        stderr = (cwd / data_dir).with_name(data_dir.name + ".stderr")
        with stderr.open("w") as sink:
            options = ["--no-browser", "--port", "0", "--data-dir", str(data_dir)]
            process = subprocess.Popen(
                [*command, *options],
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=sink,
                bufsize=0,
                start_new_session=True,  # its process group is its own, to kill whole
                env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"},
            )
        try:
            lines = _Lines(process, began + START_SECONDS, stderr)
            url = lines.find(r"https?://\S+")
            gate = lines.find(r"SIGNOFF_URL=.*")
            redis = shlex.split(lines.find(r"(?<=REDIS_URL=).*"))[0]
            lines.find(r"signoff token list$")
        except BaseException:
            end(process)
            raise
        elapsed = time.monotonic() - began
        return cls(
            process=process,
            url=url,
            gate_command=gate,
            redis_url=redis,
            printed=tuple(lines.seen),
            signoff_commands=tuple(line.strip() for line in lines.seen if "REDIS_URL=" in line),
            data_dir=(cwd / data_dir).resolve(),
            stderr=stderr,
            started_in=elapsed,
        )

    def stop(self) -> tuple[int, float, str]:
        """Ctrl-C it; returns the exit code, how long it took to exit, and its stderr."""
        began = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            end(self.process)
            raise AssertionError(
                f"the demo did not exit within {STOP_SECONDS}s of Ctrl-C: {self.stderr.read_text()}"
            ) from None
        return self.process.returncode, time.monotonic() - began, self.stderr.read_text()


def end(process: subprocess.Popen[bytes]) -> None:
    """Stop a demo however it is stuck: Ctrl-C, then SIGTERM, each given ``STOP_SECONDS``
    (it then stops its Redis itself); then SIGKILL to its process group and to every
    process it started (its Redis runs in a session of its own), so none outlives it."""
    started = set(descendants(process.pid))
    for stopping in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(stopping)
        try:
            process.wait(timeout=STOP_SECONDS)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        started.update(descendants(process.pid))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if process.stdout is not None:
        process.stdout.close()


def descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs, as Linux's /proc lists them now."""
    found: list[int] = []
    parents = [pid]
    while parents:
        for children in Path(f"/proc/{parents.pop()}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                kids = [int(child) for child in children.read_text().split()]
                found.extend(kids)
                parents.extend(kids)
    return found


class _Lines:
    """The demo's stdout, line by line, read from the pipe without a buffer in between (a
    buffered reader could hold lines a select on the pipe would never report)."""

    def __init__(self, process: subprocess.Popen[bytes], deadline: float, stderr: Path) -> None:
        self._process, self._deadline, self._stderr = process, deadline, stderr
        self._pending = b""
        self.seen: list[str] = []

    def find(self, pattern: str) -> str:
        """What ``pattern`` matches in the next line that has it; stderr if it exits first."""
        while True:
            line = self._line()
            found = re.search(pattern, line)
            if found:
                return found.group(0)

    def _line(self) -> str:
        out = self._process.stdout
        assert out is not None
        while b"\n" not in self._pending:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0 or not select.select([out], [], [], remaining)[0]:
                raise AssertionError(f"the demo printed too little within {START_SECONDS}s")
            chunk = os.read(out.fileno(), 65536)
            if not chunk:
                self._process.wait()
                code, err = self._process.returncode, self._stderr.read_text()
                raise AssertionError(f"the demo exited with {code}: {err}")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        self.seen.append(line.decode())
        return self.seen[-1]
