"""Workflows: graphs of async functions and agents whose nodes can stop for a human."""

from .context import NodeContext, NodeFunction
from .graph import Edge, Node, Router, Workflow

__all__ = ["Edge", "Node", "NodeContext", "NodeFunction", "Router", "Workflow"]
