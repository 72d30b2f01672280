"""Delete files older than 5 days, but only after a person says yes.

Run it with ``.venv/bin/python examples/cleanup_agent.py`` (``./run demo`` or ``./run
test`` sets up ``.venv``). It makes a scratch directory with old and new files, lets a
scripted model find and delete the old ones, and stops for your approval before anything
is deleted: answer y (approve), n (deny) or t (approve, and trust this tool for the rest
of the run). The scratch directory is removed at the end.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agent_runtime import (
    Agent,
    Decision,
    Interrupt,
    Remember,
    ScriptedModel,
    ToolCall,
    tool,
)

DAY = 24 * 3600


@tool
def find_old_files(directory: str, days: int) -> list[str]:
    """List the files under ``directory`` last modified more than ``days`` days ago."""
    cutoff = time.time() - days * DAY
    return sorted(
        str(p) for p in Path(directory).rglob("*") if p.is_file() and p.stat().st_mtime < cutoff
    )


@tool
def delete_files(paths: list[str]) -> str:
    """Delete the given files."""
    for path in paths:
        Path(path).unlink()
    return f"deleted {len(paths)} file(s)"


def make_scratch_directory() -> tuple[Path, list[str]]:
    """A directory with three files aged 10, 7 and 1 days; returns it and the old ones."""
    scratch = Path(tempfile.mkdtemp(prefix="signoff-cleanup-"))
    old: list[str] = []
    for name, age_days in (("build.log", 10), ("cache.tmp", 7), ("today.txt", 1)):
        path = scratch / name
        path.write_text(f"{name}\n")
        stamp = time.time() - age_days * DAY
        os.utime(path, (stamp, stamp))
        if age_days > 5:
            old.append(str(path))
    return scratch, sorted(old)


def build_agent(scratch: Path, old_files: list[str]) -> Agent:
    model = ScriptedModel(
        [
            [ToolCall(name="find_old_files", args={"directory": str(scratch), "days": 5})],
            [ToolCall(name="delete_files", args={"paths": old_files})],
            "Cleanup run finished.",
        ]
    )
    return Agent(
        model=model,
        tools=[find_old_files, delete_files],
        interrupt_on={"delete_files": {"description": "Delete files older than 5 days"}},
        system_prompt="You delete files older than 5 days.",
        name="file-cleanup",
    )


def ask(interrupt: Interrupt) -> Decision:
    """Show the interrupt and read the person's answer from stdin."""
    args = interrupt.tool_call.args if interrupt.tool_call else {}
    print(f"\n[approval needed] {interrupt.description}")
    for path in args.get("paths", []):
        print(f"  - {path}")
    while True:
        print("Approve? [y]es / [n]o / [t]rust for this run: ", end="", flush=True)
        line = sys.stdin.readline()
        answer = line.strip().lower()
        if answer in ("y", "yes"):
            return Decision.approve()
        if answer in ("t", "trust"):
            return Decision.approve(remember=Remember(scope="run"))
        if answer in ("n", "no") or not line:  # no answer at all (end of input) is a no
            return Decision.reject("The operator said no.")


async def main() -> int:
    scratch, old_files = make_scratch_directory()
    try:
        agent = build_agent(scratch, old_files)
        print(f"Scratch directory: {scratch}")
        result = await agent.invoke("Clean up files older than 5 days.", thread_id="cleanup")
        while result.stop_reason == "interrupt":
            answers = {interrupt.id: ask(interrupt) for interrupt in result.interrupts}
            result = await agent.invoke(answers, thread_id="cleanup")
        remaining = sorted(p.name for p in scratch.iterdir())
        print(f"\nOutcome: {result.stop_reason}: {result.message}")
        print(f"Files left: {', '.join(remaining) or 'none'}")
        return 0 if result.stop_reason == "end_turn" else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
