"""A workflow thread between nodes: the run's interrupt bookkeeping and where the graph stands."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..errors import UnresumableError, UsageError
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

    def check_node(self, thread_id: str, nodes: Collection[str]) -> None:
        """UnresumableError when the thread stopped at a node ``nodes`` lacks (renamed or
        removed since it stopped): it names that node, the ones there are, and what did not
        run."""
        if self.node is None or self.node in nodes:
            return
        raise UnresumableError(
            f"thread {thread_id} stopped at node {self.node!r}, which this workflow no longer "
            f"has (its nodes: {', '.join(repr(n) for n in nodes)}); {self.node!r} and the "
            "nodes after it did not run"
        )

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
