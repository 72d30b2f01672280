"""`python -m sandbox` runs the workspace on its own and stops cleanly on Ctrl-C."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

from sandbox import SandboxError, load_workspace

ROOT = Path(__file__).resolve().parents[2]


async def test_python_dash_m_sandbox_serves_and_stops_on_ctrl_c() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sandbox",
        "--port",
        "0",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(20):
            banner = ""
            while "SLACK_SIGNING_SECRET" not in banner:
                banner += (await process.stdout.readline()).decode()
        base_url = re.search(r"Sandbox workspace: (\S+)/", banner)
        assert base_url
        # The settings it printed are lines a shell takes as they are.
        exports = [line for line in banner.splitlines() if line.startswith("export ")]
        shell = "\n".join([*exports, 'echo "$SLACK_BOT_TOKEN $SIGNOFF_SLACK_API_URL"'])
        echoed = await asyncio.create_subprocess_exec(
            "bash", "-c", shell, stdout=asyncio.subprocess.PIPE, env={}
        )
        said, _ = await echoed.communicate()
        token, api_url = said.decode().split()
        assert api_url == base_url[1] + "/api/" and len(exports) == 4
        async with aiohttp.ClientSession() as http:
            async with http.get(base_url[1] + "/") as page:
                assert page.status == 200
            headers = {"Authorization": f"Bearer {token}"}
            async with http.post(base_url[1] + "/api/auth.test", headers=headers) as response:
                assert (await response.json())["ok"] is True
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(10):
            code = await process.wait()
    assert code == 0


async def _sandbox_fails(*options: str) -> str:
    """Run ``python -m sandbox`` with ``options``; it must exit 2 at once: its stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sandbox",
        *options,
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(20):
        _, err = await process.communicate()
    assert process.returncode == 2, err
    return err.decode()


async def test_a_workspace_file_it_cannot_read_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "team.json"
    assert await _sandbox_fails("--workspace", str(missing)) == (
        f"python -m sandbox: --workspace {missing}: No such file or directory\n"
    )


async def test_a_port_in_use_is_one_line_and_leaves_nothing_open() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # One line: no traceback, and no "Unclosed client session" from a half-started sandbox.
        assert await _sandbox_fails("--port", str(port)) == (
            f"python -m sandbox: port {port} is in use: pass another --port, or 0 for a free one\n"
        )


async def test_a_port_out_of_range_is_a_usage_error() -> None:
    err = await _sandbox_fails("--port", "70000")
    assert err.endswith("argument --port: '70000' is not a port: give 0 to 65535\n"), err


def test_a_workspace_seed_loads_from_json_and_is_checked() -> None:
    seed = load_workspace(
        '{"team_name": "Acme", "users": [{"id": "U1", "name": "ann", "real_name": "Ann",'
        ' "tz": "Europe/Oslo"}], "channels": [{"id": "C1", "name": "ops", "members": ["U1"]}]}'
    )
    assert seed.team_name == "Acme" and seed.users[0].tz == "Europe/Oslo"
    with pytest.raises(SandboxError, match="unknown users"):
        load_workspace('{"channels": [{"id": "C1", "name": "ops", "members": ["U9"]}]}')
    with pytest.raises(SandboxError, match="invalid workspace seed"):
        load_workspace('{"users": [{"id": "U1"}]}')
