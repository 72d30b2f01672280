"""Signoff: Slack approvals for AI agents and ops jobs.

Declare agents and who approves what with ``AgentSpec`` and ``Policy``; start a run from
Python with ``await signoff.start(agent, input, channel=..., requested_by=...)``. A running
bot (``signoff serve | socket | worker``) takes the decisions and resumes the run.
"""

from agent_runtime.interrupts import Remember
from bot.agents.policy import AgentSpec, Escalate, Policy, Reminders
from bot.errors import BotError, ConfigError, PolicyError
from bot.process.settings import Settings

from .starting import start

__all__ = [
    "AgentSpec",
    "BotError",
    "ConfigError",
    "Escalate",
    "Policy",
    "PolicyError",
    "Remember",
    "Reminders",
    "Settings",
    "start",
]
