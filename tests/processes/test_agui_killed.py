"""Real processes: the bot running an AG-UI app's round (no cards) is killed -9 while the
approved tool runs. The app's next request, to another process, continues the round once
the dead one's hold has lapsed, as a resume worker continues a run whose worker died: the
tool starts again knowing an earlier attempt may have done its work, and the thread is
usable again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path
from typing import Any

import aiohttp
from procs import exit_status, free_port, signoff_env, start_signoff, until_healthy

from sandbox import Sandbox

TOKEN = "app-token-" + "z" * 24
THREAD = "thread-killed"


async def _events(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one AG-UI run request."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=headers) as sent:
        assert sent.status == 200, await sent.text()
        text = await sent.text()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def _marks(marks: Path) -> list[list[str]]:
    return [line.split() for line in marks.read_text().splitlines()] if marks.exists() else []


async def _tool_started(marks: Path) -> None:
    async with asyncio.timeout(15):
        while True:
            if _marks(marks):
                return
            await asyncio.sleep(0.05)  # the tool runs in another process: poll its marks


async def test_an_app_round_killed_mid_tool_is_continued_by_the_apps_next_request(
    sandbox: Sandbox, redis_url: str, tmp_path: Path
) -> None:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    env = signoff_env(sandbox, redis_url, marks, port) | {"SIGNOFF_API_TOKEN": TOKEN}
    del env["SIGNOFF_CHANNEL"]  # the app alone answers: no cards, no resume worker
    url = f"http://127.0.0.1:{port}/agui/cleanup-app"
    doomed = start_signoff("serve", env=env, log=log)
    cut: asyncio.Task[list[dict[str, Any]]] | None = None
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", doomed, log)
        prompt = {"role": "user", "id": "u1", "content": "clean up"}
        *_, asked = await _events(url, {"threadId": THREAD, "runId": "r1", "messages": [prompt]})
        [interrupt] = asked["outcome"]["interrupts"]
        approve = {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"type": "approve"},
        }
        resume = {"threadId": THREAD, "runId": "r2", "resume": [approve]}
        cut = asyncio.create_task(_events(url, resume))
        await _tool_started(marks)  # and it hangs
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        if cut is not None:
            with contextlib.suppress(aiohttp.ClientError):
                await cut

    survivor = start_signoff("serve", env=env, log=log)
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", survivor, log)
        answers: list[list[dict[str, Any]]] = []
        async with asyncio.timeout(30):
            while True:  # told it runs until the dead process's hold lapses
                answers.append(await _events(url, resume))
                if answers[-1][-1]["type"] != "RUN_ERROR":
                    break
                await asyncio.sleep(0.2)
        told_again = await _events(url, resume)
        next_run = await _events(url, {"threadId": THREAD, "runId": "r3", "messages": [prompt]})
    finally:
        survivor.send_signal(signal.SIGTERM)
        assert await exit_status(survivor) == 0, log.read_text()

    assert all(a[-1]["code"] == "round_running" for a in answers[:-1]), answers
    finished = answers[-1][-1]
    assert finished["outcome"] == {"type": "success"}, answers[-1]
    assert finished["result"] == "done: deleted 2 file(s)"
    # The continued round started the tool again, telling it an attempt may have happened.
    [(pid, first, key, *paths), (other_pid, second, same_key, *_)] = _marks(marks)
    assert (first, second, same_key, paths) == ("1", "2", key, ["/tmp/a", "/tmp/b"])
    assert other_pid != pid
    # Sent again, the resume is told how the round ended, and runs nothing.
    assert [e["type"] for e in told_again] == ["RUN_STARTED", "RUN_FINISHED"], told_again
    assert told_again[-1]["outcome"] == {"type": "success"} and len(_marks(marks)) == 2
    # The thread takes a new prompt: its model answers it.
    assert "TEXT_MESSAGE_CONTENT" in [e["type"] for e in next_run], next_run
    assert next_run[-1]["type"] == "RUN_FINISHED", next_run
