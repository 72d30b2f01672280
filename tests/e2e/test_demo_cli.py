"""``python -m demo`` and ``./run demo`` typed in a shell: Ctrl-C stops everything at once with exit
code 0, one demo per data directory, help and usage errors before anything is installed."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
from demo_process import ROOT, RUN_DEMO, DemoProcess
from demo_users import start_demo as _start
from demo_users import stop_demo as _stop


async def test_a_second_demo_on_the_same_data_dir_refuses_to_start(tmp_path: Path) -> None:
    demo = await _start(tmp_path / "demo")
    second = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "demo", "--no-browser", "--data-dir", str(demo.data_dir)),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await second.communicate()
    assert second.returncode == 2
    assert f"another demo is running on {demo.data_dir}" in stderr.decode()
    await _stop(demo)


async def test_run_demo_answers_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    installed, project = ROOT / ".venv" / ".installed", ROOT / "pyproject.toml"
    assert installed.exists() and installed.stat().st_mtime >= project.stat().st_mtime, (
        "pyproject.toml changed since .venv was set up, so ./run would reinstall before the"
        " demo; a test never installs: run ./run test, which sets up first"
    )
    # Typed in another directory, with a --data-dir relative to it.
    demo = await asyncio.to_thread(DemoProcess.start, Path("demo"), command=RUN_DEMO, cwd=tmp_path)
    assert f"  state in {tmp_path / 'demo'}; Ctrl-C stops it" in demo.printed
    # Without SIGNOFF_WEBHOOK_ALLOW too: a receiver on https needs no allowing.
    assert any(
        line.startswith("  The demo job's webhooks are signed with ") for line in demo.printed
    )
    async with aiohttp.ClientSession() as http:
        async with http.get(demo.url) as page:
            assert page.status == 200 and "acting-as" in await page.text()
        async with http.get(demo.url + "ui/workspace") as workspace:
            assert (await workspace.json())["app"]["commands"] == ["/signoff"]
    code, took, said = await asyncio.to_thread(demo.stop)
    assert code == 0 and took < 5.0, said
    assert f"./run demo --data-dir {tmp_path / 'demo'} shows it again" in said


def test_run_demo_help_answers_before_anything_is_installed(tmp_path: Path) -> None:
    """A fresh clone: no virtualenv yet. ``--help`` must not install the world first; the
    system's Python (no Signoff dependencies) answers it."""
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "demo", clone / "demo")
    shutil.copy2(ROOT / "run", clone / "run")
    answer = subprocess.run(
        ["bash", str(clone / "run"), "demo", "--help"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.startswith("usage: ./run demo")
    assert "--port" in answer.stdout
    assert not (clone / ".venv").exists()


def test_run_refuses_a_mistyped_option_and_answers_help_before_anything_is_installed(
    tmp_path: Path,
) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "demo", clone / "demo")
    shutil.copy2(ROOT / "run", clone / "run")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(clone / "run"), *args],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
        )

    mistyped = run("demo", "--prot", "3100")
    assert mistyped.returncode == 2 and "unrecognized arguments: --prot" in mistyped.stderr
    helped = run("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: ./run demo"), helped
    assert not (clone / ".venv").exists()


def test_a_port_out_of_range_is_a_usage_error() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "demo", "--port", "99999"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert answer.returncode == 2, answer.stderr
    assert "--port: '99999' is not a port: give 0 to 65535" in answer.stderr
    assert "Traceback" not in answer.stderr


def test_a_port_in_use_is_told_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = ["--no-browser", "--port", str(port), "--data-dir", str(tmp_path / "demo")]
        answer = subprocess.run(
            [sys.executable, "-m", "demo", *options],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert answer.returncode == 2, answer.stderr
    assert answer.stderr == (
        f"demo: port {port} is in use: pass another --port, or leave --port out for a free one\n"
    )
