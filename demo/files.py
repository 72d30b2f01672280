"""The file-cleanup agent: finds files older than 5 days in its scratch directory and,
once a person approves, deletes them.

The scratch directory lives under the demo's data directory. Before each new run it is
topped up with sample files (some old, some new) so there is always something to approve.
Deletion is confined to that directory, whatever arguments an approver edits in. Each
deletion leaves a receipt under the call's idempotency key: when a process died after
deleting but before the run saved the result, the next attempt reports the first one's
result instead of deleting again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from agent_runtime import (
    Agent,
    BeforeInvocation,
    Message,
    SessionStore,
    Tool,
    ToolCall,
    ToolContext,
    tool,
)
from bot.agents.policy import AgentFactory

from .model import ConversationScript, last_tool_result

DAY = 24 * 3600
OLDER_THAN_DAYS = 5
SAMPLES = (
    ("build-1042.log", 12),
    ("cache-7f3a.tmp", 9),
    ("core.2231.dump", 6),
    ("report-draft.md", 3),
    ("notes-today.txt", 0),
)
"""Sample files and their age in days."""


def old_files(scratch: Path, days: int) -> list[str]:
    """Files under ``scratch`` last modified more than ``days`` days ago, relative to it."""
    cutoff = time.time() - days * DAY
    found = [p for p in scratch.rglob("*") if p.is_file() and p.stat().st_mtime < cutoff]
    return sorted(str(p.relative_to(scratch)) for p in found)


def top_up(scratch: Path) -> None:
    """Recreate the sample files when nothing old is left, so every run has work."""
    scratch.mkdir(parents=True, exist_ok=True)
    if old_files(scratch, OLDER_THAN_DAYS):
        return
    for name, age_days in SAMPLES:
        path = scratch / name
        path.write_text(f"{name}: a sample file for the Signoff demo\n")
        stamp = time.time() - age_days * DAY - 3600
        os.utime(path, (stamp, stamp))


def _tools(scratch: Path) -> list[Tool]:
    root = scratch.resolve()
    receipts = scratch.parent / "receipts"

    @tool
    def find_old_files(days: int) -> list[str]:
        """List the scratch directory's files last modified more than ``days`` days ago."""
        return old_files(root, days)

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete the given files, relative to the scratch directory (and only inside it)."""
        receipt = receipts / context.idempotency_key.replace("/", "_")
        if context.attempt > 1 and receipt.is_file():
            return receipt.read_text()  # an earlier attempt deleted them; its result was lost
        deleted, refused = 0, []
        for name in paths:
            path = (root / name).resolve()
            if not path.is_relative_to(root):
                refused.append(name)
            elif path.is_file():
                path.unlink()
                deleted += 1
        summary = f"deleted {deleted} file(s)"
        if refused:
            summary += f"; refused outside {root}: {', '.join(refused)}"
        receipts.mkdir(parents=True, exist_ok=True)
        receipt.write_text(summary)
        return summary

    return [find_old_files, delete_files]


def _delete_or_stop(messages: Sequence[Message]) -> str | list[ToolCall]:
    found, _ = last_tool_result(messages)
    if not found:
        return f"Nothing is older than {OLDER_THAN_DAYS} days; nothing to delete."
    return [ToolCall(name="delete_files", args={"paths": list(found)})]


def _summary(messages: Sequence[Message]) -> str:
    result, is_error = last_tool_result(messages)
    if is_error:
        return f"Nothing was deleted: {result}"
    return f"Cleanup finished: {result}."


def file_cleanup(scratch: Path) -> AgentFactory:
    """How the bot builds the agent over its session store, working in ``scratch``."""

    def describe(call: ToolCall) -> str:
        count = len(call.args.get("paths") or [])
        return f"Delete {count} file(s) older than {OLDER_THAN_DAYS} days from {scratch}"

    def build(store: SessionStore) -> Agent:
        def refill(event: BeforeInvocation) -> None:
            if event.prompt is not None:  # a new run, not a resume
                top_up(scratch)

        model = ConversationScript(
            [
                [ToolCall(name="find_old_files", args={"days": OLDER_THAN_DAYS})],
                _delete_or_stop,
                _summary,
            ]
        )
        return Agent(
            model=model,
            tools=_tools(scratch),
            hooks=[refill],
            interrupt_on={"delete_files": {"description": describe}},
            session_store=store,
            system_prompt=f"You delete files older than {OLDER_THAN_DAYS} days.",
            name="file-cleanup",
        )

    return build
