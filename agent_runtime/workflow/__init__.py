"""Workflows: graphs of async functions and agents whose nodes can stop for a human."""

from .context import Node, NodeContext, NodeFunction
from .graph import Edge, Router, Workflow

__all__ = ["Edge", "Node", "NodeContext", "NodeFunction", "Router", "Workflow"]
