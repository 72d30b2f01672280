"""Errors the bot raises on purpose; every one derives from BotError."""

from __future__ import annotations


class BotError(Exception):
    """Base class of every error the bot raises on purpose."""


class ConfigError(BotError):
    """A setting is missing or malformed; the message names it and says what to set."""


class PolicyError(BotError):
    """An approval policy or agent declaration is inconsistent: fix the agents module."""


class AgentsModuleError(BotError):
    """The agents module named by SIGNOFF_AGENTS could not be loaded or declares nothing."""


class SlackUnreachableError(BotError):
    """Slack could not be reached for something a request needs now: try again later."""
