"""Errors the bot raises on purpose; every one derives from BotError but AgentBuildError,
which callers must not take for a refusal of the request."""

from __future__ import annotations


class BotError(Exception):
    """Base class of every error the bot raises on purpose."""


class ConfigError(BotError):
    """A setting is missing or malformed; the message names it and says what to set."""


class PolicyError(BotError):
    """An approval policy or agent declaration is inconsistent: fix the agents module."""


class AgentsModuleError(BotError):
    """The agents module named by SIGNOFF_AGENTS (or --agents) could not be loaded or declares
    nothing."""


class UnknownAgentError(BotError):
    """No agent of that name is loaded in this process; the message names the ones that are."""


class RunRefusedError(BotError):
    """A run was asked for where it cannot run (a channel's #name, or a direct message its
    approvers never see): the request is wrong, not the bot, and nothing was started."""


class UndecidableError(BotError):
    """A run stopped for an approval its policy offers no decision for that the call allows
    (known only as it asks, as an adapted framework's gates do): no card could decide it."""

    def __init__(self, agent: str, why: str) -> None:
        super().__init__(
            f"not asked: {why}, so no card of agent {agent} could decide it, and the call "
            "did not run; its policy (Policy(decisions=...), or one of its own in "
            "AgentSpec(tools=...)) must offer a decision the call allows"
        )


class SlackUnreachableError(BotError):
    """Slack could not be reached for something a request needs now: try again later."""


class AgentBuildError(Exception):
    """An agent's ``build`` raised an error of its own code (a missing API key, say), or
    returned something that is not an agent. The message names the agent and what went
    wrong, not a raised error's own message, which may hold anything (the log has it, as
    the cause). Not a BotError: it is the agent failing (the runs API's 500), not an
    unknown agent (its 404)."""

    def __init__(self, agent: str, what: str, cause: Exception | None = None) -> None:
        super().__init__(f"agent {agent!r}: {what}")
        self.cause = cause

    def in_full(self) -> str:
        """The message with the error's own on one line, for the operator's terminal."""
        said = " ".join(str(self.cause).split()) if self.cause is not None else ""
        return f"{self}: {said}" if said else str(self)
