"""A Strands resume tried again after a failure (the model call after the tools erred, or
its process died inside a tool): the results its tools gave are kept as they come, and a
retry gets them back instead of running the tools again; a tool it started and lost is
not run again either."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from strands.hooks import (
    AfterToolCallEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    HookOrder,
    HookProvider,
    HookRegistry,
)
from strands.types.tools import ToolResult

from agent_runtime.interrupts import InterruptResponse
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import ToolResult as CallResult
from agent_runtime.run_events import ToolCallFinished
from agent_runtime.session import SessionStore, StoredSession

from .adapted import KeptResults, not_run_again
from .strands_batch import batch_calls


class KeptToolResults(KeptResults, HookProvider):
    """Saves the result of each call of the interrupted tool batch as the resume runs it
    (a hook's retry of the call: its last attempt), and answers a call whose result an
    earlier try of the same resume saved with that result, once, without running the
    tool: an approved call runs once even when the model fails after it. Each call's
    start is saved before its tool runs: a call an earlier try started and lost (its
    process died inside the tool) may have done part of its work, so the retry answers it
    with why instead of running it again. Calls after the next model call are not kept (a
    retry asks the model for them again, and some providers number calls per turn, so
    their ids repeat)."""

    _REPLAYED = "answered with the result saved when it ran"

    def __init__(
        self,
        store: SessionStore,
        thread_id: str,
        stored: StoredSession,
        responses: Sequence[InterruptResponse],
    ) -> None:
        super().__init__(store, thread_id, stored, responses)
        self._batch = {use["toolUseId"] for use in batch_calls(stored.snapshot.get("strands"))}
        self._replayable = set(self.kept)  # saved by an earlier try, answered once each
        self._lost = self.started - set(self.kept)  # started by an earlier try, no result
        self._running: set[str] = set()
        self.finished: dict[str, ToolCallFinished] = {}
        """What each call of the batch that ran (now or in an earlier try) did, by id."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        # Last: a call denied by any hook, or by an intervention (which Strands runs after
        # the agent's hooks), did not start.
        registry.add_callback(BeforeToolCallEvent, self._replay, order=HookOrder.SDK_LAST)
        registry.add_callback(AfterToolCallEvent, self._keep)
        registry.add_callback(BeforeModelCallEvent, self._batch_done)

    def _batch_done(self, event: BeforeModelCallEvent) -> None:
        self._batch.clear()

    async def _replay(self, event: BeforeToolCallEvent) -> None:
        use_id = event.tool_use["toolUseId"]
        if use_id not in self._batch:
            return
        if event.cancel_tool:  # denied or answered: it does not run
            self._running.add(use_id)
        elif use_id in self._replayable:
            self._replayable.discard(use_id)  # a hook's retry of it runs the tool
            event.cancel_tool = self._REPLAYED
        elif use_id in self._lost:
            event.cancel_tool = not_run_again(event.tool_use["name"])
            self._running.add(use_id)
        else:
            if use_id not in self.started:  # a hook's retry of it: its start is saved
                await self.start(use_id)
            self._running.add(use_id)

    async def _keep(self, event: AfterToolCallEvent) -> None:
        use_id = event.tool_use["toolUseId"]
        if event.cancel_message == self._REPLAYED:
            event.result = cast(ToolResult, self.kept[use_id])
            self._ran(event)
            return
        if use_id not in self._running:
            return
        self._running.discard(use_id)
        if event.cancel_message is None:
            await self.keep(use_id, cast(JSONValue, event.result))
            self._ran(event)
        elif event.cancel_message == not_run_again(event.tool_use["name"]):
            self._ran(event)  # told as a failure; a denied or answered call did not run

    def _ran(self, event: AfterToolCallEvent) -> None:
        use, result = event.tool_use, event.result
        texts = [c["text"] for c in result["content"] if "text" in c]
        self.finished[use["toolUseId"]] = ToolCallFinished(
            tool_call=ToolCall(id=use["toolUseId"], name=use["name"], args=dict(use["input"])),
            result=CallResult(
                content="\n".join(texts) if texts else cast(JSONValue, result["content"]),
                is_error=result["status"] == "error",
            ),
            thread_id=self.thread_id,
        )
