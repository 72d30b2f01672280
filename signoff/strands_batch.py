"""The tool batch a Strands agent's open interrupts stopped, as its snapshot keeps it:
its calls, and closing it so the thread takes a new prompt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_runtime.messages import JSONValue


def batch_calls(strands: Any) -> list[dict[str, Any]]:
    """The ``toolUse`` blocks of the tool batch the agent's open interrupts stopped."""
    data = (strands.get("data") or {}) if isinstance(strands, dict) else {}
    pending = (data.get("interrupt_state") or {}).get("pending_tool_execution") or {}
    content = (pending.get("assistant_message") or {}).get("content") or []
    return [c["toolUse"] for c in content if "toolUse" in c]


def closed_batch(strands: Any, reason: str, kept: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    """The agent's snapshot with its interrupted tool batch closed and its interrupt state
    cleared, so the thread takes a new prompt: each call gets its result (an error saying
    why, unless it had finished, or ran in a resume that failed after it: ``kept``), and
    the assistant says the run ended."""
    data = dict(strands["data"])
    pending = (data.get("interrupt_state") or {}).get("pending_tool_execution") or {}
    done = {r["toolUseId"]: r for r in pending.get("completed_tool_results") or []}
    done.update(kept)
    results = [
        done.get(use["toolUseId"])
        or {"toolUseId": use["toolUseId"], "status": "error", "content": [{"text": reason}]}
        for use in batch_calls(strands)
    ]
    if results:
        data["messages"] = [
            *data["messages"],
            {"role": "user", "content": [{"toolResult": r} for r in results]},
            {"role": "assistant", "content": [{"text": reason}]},
        ]
    data["interrupt_state"] = {"interrupts": {}, "context": {}, "activated": False}
    return {**strands, "data": data}
