"""Errors raised by the agent runtime; every one derives from AgentRuntimeError."""

from __future__ import annotations


class AgentRuntimeError(Exception):
    """Base class of every error the runtime raises on purpose."""


class UsageError(AgentRuntimeError):
    """The runtime was called the wrong way: a programmer mistake, fixed in code."""


class UnresumableError(UsageError):
    """A stored run stopped where this code no longer goes (a workflow node renamed or
    removed since, by a deploy): no retry can resume it; the message says what is missing."""


class ResumeError(AgentRuntimeError):
    """A resume did not match the run's pending interrupts; the stored run is unchanged."""


class EditRefusedError(ResumeError):
    """Edited arguments the tool would refuse: ``argument`` names the first at fault (None
    for the arguments as a whole), and ``problem`` says what is wrong with it."""

    def __init__(self, message: str, *, argument: str | None, problem: str) -> None:
        super().__init__(message)
        self.argument = argument
        self.problem = problem


class StaleSessionError(AgentRuntimeError):
    """A snapshot was saved over a newer one; reload the run and try again."""


class ThreadBusyError(StaleSessionError):
    """Another process holds the thread's lease: it is running or resuming it now."""


class ModelError(AgentRuntimeError):
    """The model provider failed or answered something the runtime cannot use."""


class ToolInputError(AgentRuntimeError):
    """A tool was called with arguments that fail its input schema."""
