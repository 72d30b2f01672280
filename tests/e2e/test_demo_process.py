"""The demo helper itself: a demo that fails to start in a test leaves nothing running."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import demo_process
import pytest
from demo_process import DemoProcess, descendants

REDIS_NAMES = ("redis-server", "valkey-server")


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie left to its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_a_demo_hung_while_starting_is_stopped_with_its_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo started its Redis, then hangs (stopped: deaf to Ctrl-C and SIGTERM) before
    it is ready: the failed start kills it, and its Redis with it, not left an orphan."""
    find = demo_process._Lines.find
    started: dict[int, str] = {}

    def hangs_before_ready(lines: demo_process._Lines, pattern: str) -> str:
        if pattern != r"signoff token list$":
            return find(lines, pattern)
        pid = lines._process.pid
        started.update((child, _name(child)) for child in descendants(pid))
        os.kill(pid, signal.SIGSTOP)
        raise AssertionError("the demo printed too little")

    monkeypatch.setattr(demo_process, "STOP_SECONDS", 0.5)
    monkeypatch.setattr(demo_process._Lines, "find", hangs_before_ready)
    with pytest.raises(AssertionError, match="printed too little"):
        DemoProcess.start(tmp_path / "demo")

    assert set(started.values()) & set(REDIS_NAMES), started
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {pid: name for pid, name in started.items() if _running(pid)}
    assert left == {}, left
