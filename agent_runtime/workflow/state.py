"""A workflow thread between nodes: the run's interrupt bookkeeping and where the graph stands."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..messages import JSONValue
from ..session import Snapshot
from ..state import RunState


@dataclass(kw_only=True)
class WorkflowState:
    """``run`` keeps pending interrupts, answers and app state exactly as an agent's run does.

    ``node`` is the next node to run (None once the run has ended) and ``input`` its input;
    ``run.steps`` counts the nodes completed in this run and so fixes each node's id.
    """

    run: RunState
    node: str | None = None
    input: JSONValue = None

    @property
    def node_id(self) -> str:
        """The current node's id, stable across replays: interrupt ids derive from it."""
        return f"{self.run.run_id}:{self.run.steps}:{self.node}"

    def agent_thread(self, thread_id: str) -> str:
        """The thread the current node's agent runs on, inside the workflow's ``thread_id``."""
        return f"{thread_id}/{self.node_id}"

    @property
    def agent_source(self) -> str:
        """The source id of interrupts raised inside the current node's agent."""
        return f"{self.node_id}/agent"

    def to_snapshot(self) -> Snapshot:
        return {**self.run.to_snapshot(), "workflow": {"node": self.node, "input": self.input}}

    @classmethod
    def from_snapshot(cls, data: Snapshot) -> WorkflowState:
        graph = data.get("workflow")
        if not isinstance(graph, dict):
            raise UsageError(
                f"thread {data.get('thread_id')} holds an agent's run, not a workflow's; "
                "use another thread id"
            )
        return cls(run=RunState.from_snapshot(data), node=graph["node"], input=graph["input"])
