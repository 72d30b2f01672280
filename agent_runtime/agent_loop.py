"""One invocation of an agent: the model/tool loop between two stops.

The thread's state is loaded, the input applied (a prompt, or answers to open
interrupts), and the loop runs until the model ends its turn, a human must decide, or a
limit is hit. State is saved before a tool starts, after every tool batch, and when the
invocation stops; a model turn is saved with the first of these, since nothing between
them has a side effect to record (a crash in between asks the model again).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from .asking import InterruptPoint
from .errors import ModelError, ToolInputError
from .events import (
    AfterInvocation,
    AfterModelCall,
    AfterToolCall,
    AfterTools,
    BeforeInvocation,
    BeforeModelCall,
    BeforeToolCall,
    BeforeTools,
    Interrupted,
    MessageAdded,
)
from .hooks import HookRegistry
from .interrupts import Interrupt, InterruptRequested, InterruptResponse
from .messages import JSONValue, Message, ToolCall, new_id
from .models.base import Model, ModelRequest, ModelResponse, held_as_json
from .results import AgentResult, StopReason, ToolResult, json_safe
from .resume import RunInput, begin, parse_input
from .run_events import (
    RunEvent,
    RunFinished,
    RunStarted,
    TextMessage,
    ToolCallFinished,
    ToolCallStarted,
)
from .session import SessionStore
from .state import RunState
from .tools import Tool, ToolContext

log = logging.getLogger(__name__)

MAX_RETRIES = 5


class AgentParts(Protocol):
    """What the loop uses of an agent (``Agent`` has each), so the loop never imports it."""

    @property
    def model(self) -> Model: ...
    @property
    def tools(self) -> Mapping[str, Tool]: ...
    @property
    def hooks(self) -> HookRegistry: ...
    @property
    def session_store(self) -> SessionStore: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def max_steps(self) -> int: ...

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited arguments that do not fit the tool's input schema."""


class Invocation:
    """Runs one invocation of ``agent`` on ``thread_id``; ``resume_with`` is set by hooks.
    On a ``new_thread`` nothing is stored yet, so nothing is read."""

    def __init__(self, agent: AgentParts, thread_id: str, *, new_thread: bool = False) -> None:
        self.agent = agent
        self.thread_id = thread_id
        self.new_thread = new_thread
        self.version = 0
        self.state = RunState(thread_id=thread_id)
        self.info = self.state.run_info()
        self.resume_with: str | Sequence[InterruptResponse] | None = None
        self._stopped: AgentResult | None = None
        self._saving = asyncio.Lock()
        self._cancelled: set[str] = set()
        """Calls whose tool did not run: denied, answered or cancelled by a hook."""

    async def run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        prompt, responses = await self._load(input)
        self.info = self.state.run_info()
        yield RunStarted(thread_id=self.thread_id, run_id=self.state.run_id)
        await self.agent.hooks.emit(
            BeforeInvocation(
                source=self.agent, run=self.info, prompt=prompt, responses=tuple(responses)
            )
        )
        if prompt is not None:
            await self._add_message(Message(role="user", content=prompt))
        result: AgentResult | None = None
        while result is None:
            if self.state.batch is None:
                if self.state.steps >= self.agent.max_steps:
                    result = await self._finish(
                        "max_steps", f"stopped after {self.state.steps} steps"
                    )
                    break
                response = await self._call_model()
                if isinstance(response, Exception):
                    result = await self._finish("error", f"model call failed: {response}")
                    break
                self.state.steps += 1
                message_id = new_id("msg")
                calls = self._distinct(response.tool_calls)
                await self._add_message(
                    Message(role="assistant", content=response.text, tool_calls=calls)
                )
                if response.text:
                    yield TextMessage(message_id=message_id, text=response.text)
                if not calls:
                    result = await self._finish("end_turn", response.text)
                    break
                self.state.batch = list(calls)
                self.state.batch_results = {}
            async for event in self._run_batch():
                yield event
            result = self._stopped
        after = AfterInvocation(source=self.agent, run=self.info, result=result)
        await self.agent.hooks.emit(after)
        self.resume_with = after.resume
        yield RunFinished(result=result)

    async def _load(self, input: RunInput) -> tuple[str | None, list[InterruptResponse]]:
        """Load the thread and apply ``input``; a bad input raises and saves nothing."""
        stored = None if self.new_thread else await self.agent.session_store.load(self.thread_id)
        if stored is not None:
            self.state = RunState.from_snapshot(stored.snapshot)
            self.version = stored.version
        return begin(self.state, parse_input(input), check_edit=self.agent.check_edit)

    async def _add_message(self, message: Message) -> None:
        self.state.messages.append(message)
        await self.agent.hooks.emit(MessageAdded(source=self.agent, run=self.info, message=message))

    def _distinct(self, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        """``calls`` with a fresh id for any call whose id is empty or named a call before
        (some providers number calls per response): decisions, results and attempts are
        kept by call id, so a reused one would hand an earlier call's approval to this."""
        seen = {c.id for m in self.state.messages for c in m.tool_calls}
        distinct = []
        for call in calls:
            if not call.id or call.id in seen:
                call = replace(call, id=new_id("call"))
            seen.add(call.id)
            distinct.append(call)
        return tuple(distinct)

    async def _save(self) -> None:
        async with self._saving:  # a batch's tools run concurrently, each may save
            self.version = await self.agent.session_store.save(
                self.thread_id, self.state.to_snapshot(), expected_version=self.version
            )

    async def _call_model(self) -> ModelResponse | Exception:
        """Call the model, retrying while an AfterModelCall hook asks for it."""
        request = ModelRequest(
            system_prompt=self.agent.system_prompt,
            messages=tuple(self.state.messages),
            tools=tuple(tool.spec for tool in self.agent.tools.values()),
        )
        response: ModelResponse | None = None
        failure: Exception | None = None
        for _ in range(MAX_RETRIES + 1):
            before = BeforeModelCall(source=self.agent, run=self.info, request=request)
            await self.agent.hooks.emit(before)
            response, failure = None, None
            try:
                response = held_as_json(await self.agent.model.generate(request))
            except Exception as error:  # a provider failure ends the run as "error"
                failure = error
                log.warning("thread %s: model call failed: %s", self.thread_id, error)
            after = AfterModelCall(
                source=self.agent,
                run=self.info,
                request=request,
                response=response,
                exception=failure,
            )
            await self.agent.hooks.emit(after)
            if not after.retry:
                break
        if response is not None:
            return response
        return failure or ModelError(f"the model call was retried {MAX_RETRIES} times")

    async def _run_batch(self) -> AsyncIterator[RunEvent]:
        """Run the turn's tool calls that have no result yet; collect interrupts.

        Results are saved before ``ToolCallFinished`` is yielded, so whatever the caller
        does with an event (posts it to Slack) never sits between a tool's side effect and
        the checkpoint that records it.
        """
        batch = self.state.batch
        assert batch is not None
        point = InterruptPoint(
            f"{batch[0].id}:tools", responses=self.state.responses(), unique_names=True
        )
        before = BeforeTools(source=self.agent, run=self.info, point=point, tool_calls=tuple(batch))
        interrupts = await self.agent.hooks.emit(before)
        if interrupts:
            self.state.hold(point.source_id, interrupts)
            self._stopped = await self._stop_for_humans()
            return
        todo = [call for call in batch if call.id not in self.state.batch_results]
        for call in todo:
            yield ToolCallStarted(tool_call=call)
        if before.cancel_message is not None:
            outcomes: list[ToolResult | list[Interrupt]] = [
                ToolResult(content=before.cancel_message, is_error=True) for _ in todo
            ]
            self._cancelled.update(call.id for call in todo)
        else:
            outcomes = await self._run_tools(todo)
        finished: list[ToolCallFinished] = []
        for call, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, ToolResult):
                self.state.batch_results[call.id] = outcome
                ran = call.id not in self._cancelled
                finished.append(
                    ToolCallFinished(
                        tool_call=call, result=outcome, thread_id=self.thread_id, ran=ran
                    )
                )
            else:
                self.state.hold(call.id, outcome)
        if self.state.pending:
            self._stopped = await self._stop_for_humans()
            for event in finished:
                yield event
            return
        for call in batch:
            result = self.state.batch_results[call.id]
            await self._add_message(
                Message(
                    role="tool",
                    content=result.as_text(),
                    tool_call_id=call.id,
                    is_error=result.is_error,
                )
            )
        results = dict(self.state.batch_results)
        self.state.batch = None
        self.state.batch_results = {}
        self.state.attempts = {}
        await self._save()
        for event in finished:
            yield event
        await self.agent.hooks.emit(
            AfterTools(source=self.agent, run=self.info, tool_calls=tuple(batch), results=results)
        )

    async def _run_tools(self, calls: list[ToolCall]) -> list[ToolResult | list[Interrupt]]:
        """Every call's BeforeToolCall hooks; then, once the starts of the tools about to
        run are counted and saved, the tools themselves, concurrently."""
        prepared = await asyncio.gather(*(self._prepare(call) for call in calls))
        starting = [p.call.id for p in prepared if isinstance(p, _Prepared) and p.runs_tool]
        if starting:
            self.state.start_attempts(starting)
            await self._save()
        return list(await asyncio.gather(*(self._execute(p) for p in prepared)))

    async def _prepare(self, stored_call: ToolCall) -> _Prepared | list[Interrupt]:
        """The call's BeforeToolCall hooks: their interrupts, or the call ready to run."""
        edited = self.state.edited_input(stored_call.id)
        args = stored_call.args if edited is None else edited
        call = ToolCall(id=stored_call.id, name=stored_call.name, args=copy.deepcopy(args))
        tool = self.agent.tools.get(call.name)
        point = InterruptPoint(
            call.id,
            responses=self.state.responses(),
            tool_call=call,
            unique_names=True,
            asked=self.state.asked(),
        )
        before = BeforeToolCall(
            source=self.agent, run=self.info, point=point, tool_call=call, selected_tool=tool
        )
        interrupts = await self.agent.hooks.emit(before)
        if interrupts:
            return interrupts
        if edited is not None and self.state.own_edit_is_latest(call.id):
            call.args.clear()  # a hook replayed an earlier approval's edit over it
            call.args.update(copy.deepcopy(edited))
        return _Prepared(call=call, stored_call=stored_call, before=before)

    async def _execute(self, prepared: _Prepared | list[Interrupt]) -> ToolResult | list[Interrupt]:
        """Run a prepared call's tool (again while an AfterToolCall hook asks to retry)."""
        if not isinstance(prepared, _Prepared):
            return prepared
        call, before, tool = prepared.call, prepared.before, prepared.before.selected_tool
        original = prepared.stored_call.args
        answers = self.state.answers_from(call.id)
        context = ToolContext(
            tool_call=call,
            point=InterruptPoint(
                call.id,
                responses=self.state.responses(),
                tool_call=call,
                taken=before.point.names,
            ),
            idempotency_key=self.state.idempotency_key(call.id),
            attempt=self.state.attempts.get(call.id, 1),
            is_resumed=bool(answers),
            resumed_metadata={k: v for answer in answers for k, v in answer.metadata.items()},
            original_input=original if call.args != original else None,
            state=self.state.app_state,
        )
        for retry in range(MAX_RETRIES + 1):
            if retry:  # a hook asked to run it again: a later start, counted and saved first
                self.state.start_attempts([call.id])
                await self._save()
                context.attempt = self.state.attempts[call.id]
            failure: Exception | None = None
            if before.cancel_message is not None:
                self._cancelled.add(call.id)
                result = ToolResult(content=before.cancel_message, is_error=True)
            elif tool is None:
                result = ToolResult(content=f"unknown tool {call.name!r}", is_error=True)
            else:
                try:
                    result = ToolResult(content=json_safe(await tool.run(call.args, context)))
                except InterruptRequested as raised:
                    return [raised.interrupt]
                except ToolInputError as error:
                    failure = error
                    result = ToolResult(content=str(error), is_error=True)
                except Exception as error:  # a failing tool is reported to the model
                    failure = error
                    log.info("thread %s: tool %s failed: %r", self.thread_id, call.name, error)
                    result = ToolResult(content=f"{call.name} failed: {error}", is_error=True)
            after = AfterToolCall(
                source=self.agent,
                run=self.info,
                tool_call=call,
                selected_tool=tool,
                result=result,
                exception=failure,
            )
            await self.agent.hooks.emit(after)
            if not after.retry:
                return after.result
        return after.result

    async def _stop_for_humans(self) -> AgentResult:
        result = self.state.wait_for_humans()
        await self._save()
        await self.agent.hooks.emit(Interrupted(source=self.agent, run=self.info, result=result))
        return result

    async def _finish(self, stop_reason: StopReason, message: str) -> AgentResult:
        result = self.state.end_run(stop_reason, message)
        await self._save()
        return result


@dataclass(frozen=True, kw_only=True)
class _Prepared:
    """A tool call its BeforeToolCall hooks let through (possibly edited or cancelled)."""

    call: ToolCall
    stored_call: ToolCall
    before: BeforeToolCall

    @property
    def runs_tool(self) -> bool:
        """Whether the tool itself will run (not cancelled, and known)."""
        return self.before.cancel_message is None and self.before.selected_tool is not None
