"""The agent the chaos benchmark's ``signoff`` processes run (SIGNOFF_AGENTS=bench.chaos_agents).

Its cleanup tool gives its call's idempotency key to the service that does the work, as
the README asks of a tool with side effects: the service (here, one append to a log, a
single write) does the work once per key, whatever the attempts. The work takes 100 ms,
so a kill can land in the middle of it. Every start is logged to SIGNOFF_CHAOS_LOG as
``start <key> <attempt> <pid>`` and the work as ``effect <key>``, so the benchmark
counts reruns and doubled effects across processes. A process started with
SIGNOFF_CHAOS_DIE_AT=<event> kills itself (SIGKILL) when a run reaches that event, so the
benchmark can stop a worker at each step of a resume.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta
from pathlib import Path

from agent_runtime import Agent, ModelRequest, ModelResponse, SessionStore, ToolCall, tool
from agent_runtime.events import (
    AfterInvocation,
    AfterModelCall,
    AfterToolCall,
    AfterTools,
    BeforeModelCall,
    BeforeToolCall,
    HookEvent,
)
from agent_runtime.hooks import HookRegistry
from agent_runtime.tools import ToolContext
from signoff import AgentSpec, Policy

APPROVERS = ("U0ALICE", "U0BOB")


class CleanupModel:
    """Asks to delete one file, then reports the tool's result (from the conversation, so
    any process continues a run the same way)."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            call = ToolCall(id="call_1", name="delete_files", args={"paths": ["/tmp/chaos"]})
            return ModelResponse(tool_calls=(call,))
        return ModelResponse(text=f"done: {results[-1].content}")


def _log(line: str) -> None:
    with Path(os.environ["SIGNOFF_CHAOS_LOG"]).open("a") as log:
        log.write(line + "\n")


@tool
def delete_files(paths: list[str], context: ToolContext) -> str:
    """Delete the given files through a service that honours idempotency keys."""
    _log(f"start {context.idempotency_key} {context.attempt} {os.getpid()}")
    time.sleep(0.1)  # the request: a kill -9 may land here
    _delete_once(context.idempotency_key)
    return f"deleted {len(paths)} file(s)"


def _delete_once(key: str) -> None:
    """The service's side: the work for ``key`` is done at most once (one write records
    both the work and its key, so no kill falls between them)."""
    log = Path(os.environ["SIGNOFF_CHAOS_LOG"])
    if log.exists() and f"effect {key}\n" in log.read_text():
        return
    _log(f"effect {key}")


STEPS = (
    BeforeToolCall,  # the approved tool is about to start
    AfterToolCall,  # it ran; its result is not saved yet
    AfterTools,  # its result is saved
    BeforeModelCall,  # the model is about to be asked again
    AfterModelCall,  # it answered; the run's end is not saved yet
    AfterInvocation,  # the end is saved; the bot has not stored or posted it
)


class DieAt:
    """Kills this process at the step named by SIGNOFF_CHAOS_DIE_AT (none when unset)."""

    def register_hooks(self, registry: HookRegistry) -> None:
        for step in STEPS:
            registry.add(self.maybe_die, step)

    @staticmethod
    def maybe_die(event: HookEvent) -> None:
        if type(event).__name__ == os.environ.get("SIGNOFF_CHAOS_DIE_AT"):
            os.kill(os.getpid(), signal.SIGKILL)


def build(sessions: SessionStore) -> Agent:
    return Agent(
        model=CleanupModel(),
        tools=[delete_files],
        hooks=[DieAt()],
        interrupt_on={"delete_files": True},
        session_store=sessions,
        name="cleanup",
    )


QUICK_EXPIRY = timedelta(seconds=6)

agents = [
    AgentSpec(name="cleanup", build=build, policy=Policy(users=APPROVERS)),
    # The same agent under a policy whose requests expire 6 s after they are posted.
    AgentSpec(
        name="quick", build=build, policy=Policy(users=APPROVERS, expires_after=QUICK_EXPIRY)
    ),
]
