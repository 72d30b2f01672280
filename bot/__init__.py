"""Signoff's Slack bot: posts interrupts, takes decisions, resumes runs.

Declare agents and their approval policies with ``AgentSpec`` and ``Policy`` in a module
named by ``SIGNOFF_AGENTS``; run the bot with ``signoff serve | socket | worker | run``.
"""

from bot.agents.policy import AgentSpec, Escalate, Policy, Reminders
from bot.errors import AgentsModuleError, BotError, ConfigError, PolicyError
from bot.process.settings import Settings
from bot.runs.drive import start_run
from bot.runs.place import Place

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
