"""Signoff's Slack bot: posts interrupts, takes decisions, resumes runs.

Declare agents and their approval policies with ``AgentSpec`` and ``Policy`` in a module
named by ``SIGNOFF_AGENTS``; run the bot with ``signoff serve | socket | worker | run``.
"""

from .errors import AgentsModuleError, BotError, ConfigError, PolicyError
from .policy import AgentSpec, Escalate, Policy, Reminders
from .runs import Place, start_run
from .settings import Settings

__all__ = [
    "AgentSpec",
    "AgentsModuleError",
    "BotError",
    "ConfigError",
    "Escalate",
    "Place",
    "Policy",
    "PolicyError",
    "Reminders",
    "Settings",
    "start_run",
]
