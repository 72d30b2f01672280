"""One invocation of a workflow: node after node between two stops.

The thread's state is loaded and the input applied (a prompt starts a new run, answers
resume an interrupted one). Each node runs after its ``BeforeNodeCall`` hooks; the state
is saved after every completed node, so a replayed resume finds the node already done.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

import pydantic

from ..agent import Agent
from ..asking import InterruptPoint
from ..edit_checks import check_model
from ..errors import ResumeError, UsageError
from ..events import AfterInvocation, AfterNodeCall, BeforeInvocation, BeforeNodeCall, Interrupted
from ..hooks import HookRegistry
from ..interrupts import Interrupt, InterruptRequested, InterruptResponse
from ..messages import JSONValue, ToolCall, new_id
from ..results import AgentResult, StopReason, json_safe
from ..resume import ContinueRun, RunInput, begin, parse_input
from ..run_events import RunEvent, RunFinished, RunStarted, TextMessage
from ..session import SessionStore
from ..state import RunState
from .context import Node, NodeContext, NodeFunction, as_text, input_from_args, node_call
from .state import WorkflowState

log = logging.getLogger(__name__)


class WorkflowParts(Protocol):
    """What a run uses of its workflow (``Workflow`` has each), so it never imports it."""

    @property
    def nodes(self) -> Mapping[str, Node]: ...
    @property
    def start(self) -> str: ...
    @property
    def hooks(self) -> HookRegistry: ...
    @property
    def session_store(self) -> SessionStore: ...
    @property
    def max_steps(self) -> int: ...
    @property
    def input_models(self) -> Mapping[str, type[pydantic.BaseModel]]: ...

    def next_node(self, node: str, output: JSONValue) -> str | None:
        """The node to run after ``node`` produced ``output``; None when the run is over."""


class WorkflowRun:
    """Runs one invocation of ``workflow`` on ``thread_id``; ``resume_with`` is set by hooks.
    On a ``new_thread`` nothing is stored yet, so nothing is read."""

    def __init__(
        self, workflow: WorkflowParts, thread_id: str, *, new_thread: bool = False
    ) -> None:
        self.workflow = workflow
        self.thread_id = thread_id
        self.new_thread = new_thread
        self.version = 0
        self.state = WorkflowState(run=RunState(thread_id=thread_id))
        self.info = self.state.run.run_info()
        self.result: AgentResult | None = None
        self.agent_answers: list[InterruptResponse] = []
        self.continuing = False
        self.resume_with: str | Sequence[InterruptResponse] | None = None

    async def run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        prompt, responses = await self._load(input)
        self.info = self.state.run.run_info()
        yield RunStarted(thread_id=self.thread_id, run_id=self.state.run.run_id)
        await self.workflow.hooks.emit(
            BeforeInvocation(
                source=self.workflow, run=self.info, prompt=prompt, responses=tuple(responses)
            )
        )
        while self.result is None:
            if self.state.node is None:
                self.result = await self._finish("end_turn", as_text(self.state.input))
            elif self.state.run.steps >= self.workflow.max_steps:
                message = f"stopped after {self.state.run.steps} nodes"
                self.result = await self._finish("max_steps", message)
            else:
                async for event in self._step(self.state.node):
                    yield event
        after = AfterInvocation(source=self.workflow, run=self.info, result=self.result)
        await self.workflow.hooks.emit(after)
        self.resume_with = after.resume
        yield RunFinished(result=self.result)

    async def _load(self, input: RunInput) -> tuple[str | None, list[InterruptResponse]]:
        """Load the thread and apply ``input``; a bad input raises and saves nothing."""
        stored = None
        if not self.new_thread:
            stored = await self.workflow.session_store.load(self.thread_id)
        if stored is not None:
            self.state = WorkflowState.from_snapshot(stored.snapshot)
            self.version = stored.version
        self.state.check_node(self.thread_id, self.workflow.nodes)
        run = self.state.run
        parsed = parse_input(input)
        self.continuing = isinstance(parsed, ContinueRun)
        agent_ids = {p.interrupt.id for p in run.pending if p.source_id == self.state.agent_source}
        prompt, responses = begin(run, parsed, check_edit=self._check_edit)
        if prompt is not None:
            self.state.node = self.workflow.start
            self.state.input = prompt
        self.agent_answers = [
            run.answers[r.interrupt_id].response for r in responses if r.interrupt_id in agent_ids
        ]
        return prompt, responses

    def _check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited arguments the node (or the agent's tool) cannot take."""
        if call.id == self.state.node_id:
            if not isinstance(self.state.input, dict) and set(args) != {"input"}:
                raise ResumeError(
                    f"node {self.state.node} takes a single input: edit it as {{'input': ...}}"
                )
            model = self.workflow.input_models.get(call.name)
            if model is not None:
                check_model(call.name, pydantic.TypeAdapter(model), args)
            return
        node = self.workflow.nodes.get(self.state.node or "")
        if isinstance(node, Agent):
            node.check_edit(call, args)

    async def _step(self, name: str) -> AsyncIterator[RunEvent]:
        """Run the current node after its hooks; on success, route on and save."""
        before = await self._before(name)
        if before is None:
            return
        node = self.workflow.nodes[name]
        if isinstance(node, Agent):
            finished: AgentResult | None = None
            thread_id = self.state.agent_thread(self.thread_id)
            agent_input = await self._agent_input(node, thread_id, before.input)
            if isinstance(agent_input, AgentResult):  # it stopped before the workflow saved
                finished = agent_input
            else:
                # Saved first, as a function node's start is: a crash inside the agent
                # leaves a run in progress, which ContinueRun continues.
                self.state.run.start_attempts([self.state.node_id])
                await self._save()
                async for event in node.stream(agent_input, thread_id=thread_id):
                    if isinstance(event, RunFinished):
                        finished = event.result
                    elif not isinstance(event, RunStarted):
                        yield event
            assert finished is not None, "every run ends with RunFinished"
            output = await self._agent_output(name, finished)
            if self.result is None:
                await self._complete(name, output)
            return
        output = await self._function_output(node, before)
        if self.result is None:
            # Saved before the output is yielded: a caller's slow handling of the event
            # never sits between the node's side effects and the checkpoint.
            await self._complete(name, output)
            if isinstance(output, str) and output:
                yield TextMessage(message_id=new_id("msg"), text=output)

    async def _agent_input(
        self, agent: Agent, thread_id: str, node_input: JSONValue
    ) -> RunInput | AgentResult:
        """Answers for the agent's interrupts, a continue of its cut-off run, or a prompt;
        when continuing after the agent stopped unrecorded, how it stopped. Answers the
        workflow holds that the agent never applied (its process died first, or a node hook
        stopped the run before it) are given to it."""
        if self.agent_answers:
            return self.agent_answers
        status = await agent.thread_status(thread_id)
        if status is not None and status.status == "interrupted":
            waiting = {interrupt.id for interrupt in status.interrupts}
            given = [a.response for i, a in self.state.run.answers.items() if i in waiting]
            if given:
                return given
        if self.continuing and status is not None:
            if status.status == "running":
                return ContinueRun()
            if status.last_result is not None:
                return status.last_result
        return as_text(node_input)

    async def _before(self, name: str) -> BeforeNodeCall | None:
        """Emit BeforeNodeCall; None when a hook interrupted or cancelled the node."""
        node_id = self.state.node_id
        edited = self.state.run.edited_input(node_id)
        node_input = self.state.input
        if edited is not None:  # a person edited the input through the node's own interrupt
            node_input = input_from_args(edited, like=node_input)
        point = InterruptPoint(
            node_id,
            responses=self.state.run.responses(),
            tool_call=node_call(node_id, name, node_input),
            unique_names=True,
            asked=self.state.run.asked(),
        )
        before = BeforeNodeCall(
            source=self.workflow,
            run=self.info,
            point=point,
            node=name,
            input=copy.deepcopy(node_input),
        )
        interrupts = await self.workflow.hooks.emit(before)
        if edited is not None and self.state.run.own_edit_is_latest(node_id):
            before.input = node_input  # a hook replayed an earlier approval's edit over it
        if interrupts:
            self.result = await self._stop_for_humans(node_id, interrupts)
        elif before.cancel_message is not None:
            self.result = await self._finish("cancelled", before.cancel_message)
        return before if self.result is None else None

    async def _function_output(self, function: NodeFunction, before: BeforeNodeCall) -> JSONValue:
        """Call a function node; an interrupt or a failure stops the run (sets ``result``).
        Its output is kept as JSON, as a tool's is (a datetime as its text, a tuple as a
        list): what the next node and the router get here is what a resume elsewhere gets."""
        node_id = self.state.node_id
        run = self.state.run
        run.start_attempts([node_id])
        await self._save()
        answers = run.answers_from(node_id)
        context = NodeContext(
            node=before.node,
            input=before.input,
            run=self.info,
            point=InterruptPoint(
                node_id,
                responses=run.responses(),
                tool_call=node_call(node_id, before.node, before.input),
                taken=before.point.names,
            ),
            idempotency_key=node_id,
            attempt=run.attempts[node_id],
            is_resumed=bool(answers),
            resumed_metadata={k: v for answer in answers for k, v in answer.metadata.items()},
            original_input=self.state.input if before.input != self.state.input else None,
        )
        try:
            return json_safe(await function(context))
        except InterruptRequested as raised:
            self.result = await self._stop_for_humans(node_id, [raised.interrupt])
        except Exception as error:  # a failing node ends the run as "error"
            log.warning("thread %s: node %s failed: %r", self.thread_id, node_id, error)
            self.result = await self._finish("error", f"node {before.node} failed: {error}")
        return None

    async def _agent_output(self, name: str, finished: AgentResult) -> JSONValue:
        """An agent node's final text; its interrupts or failure stop the run."""
        if finished.stop_reason == "interrupt":
            source = self.state.agent_source
            self.result = await self._stop_for_humans(source, list(finished.interrupts))
        elif finished.stop_reason != "end_turn":
            message = f"node {name}: {finished.message}"
            self.result = await self._finish(finished.stop_reason, message)
        return finished.message

    async def _complete(self, name: str, output: JSONValue) -> None:
        """AfterNodeCall, then move to the next node and save: the node is done for good.
        A router that fails ends the run as an error, which a node run again would meet."""
        await self.workflow.hooks.emit(
            AfterNodeCall(source=self.workflow, run=self.info, node=name, output=output)
        )
        try:
            following = self.workflow.next_node(name, output)
        except UsageError as error:  # it chose a node the workflow lacks
            self.result = await self._finish("error", str(error))
            return
        except Exception as error:  # the app's router failed
            log.warning("thread %s: the router after %s failed: %r", self.thread_id, name, error)
            failure = f"the router after {name!r} failed: {type(error).__name__}: {error}"
            self.result = await self._finish("error", failure)
            return
        run = self.state.run
        run.steps += 1
        run.answers = {}
        run.attempts = {}
        self.agent_answers = []
        self.continuing = False
        self.state.node = following
        self.state.input = output
        await self._save()

    async def _save(self) -> None:
        self.version = await self.workflow.session_store.save(
            self.thread_id, self.state.to_snapshot(), expected_version=self.version
        )

    async def _stop_for_humans(self, source_id: str, interrupts: list[Interrupt]) -> AgentResult:
        run = self.state.run
        run.pending = []
        run.hold(source_id, interrupts)
        result = run.wait_for_humans()
        await self._save()
        await self.workflow.hooks.emit(
            Interrupted(source=self.workflow, run=self.info, result=result)
        )
        return result

    async def _finish(self, stop_reason: StopReason, message: str) -> AgentResult:
        result = self.state.run.end_run(stop_reason, message)
        self.state.node = None
        await self._save()
        return result
