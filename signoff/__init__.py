"""Signoff: Slack approvals for AI agents and ops jobs.

Declare agents and who approves what with ``AgentSpec`` and ``Policy``; start a run from
Python with ``await signoff.start(agent, input, channel=..., requested_by=...)``. A running
bot (``signoff serve | socket | worker``) takes the decisions and resumes the run. Any
other Python code asks over HTTP with ``signoff.Client`` and checks webhooks with
``signoff.webhooks.verify``.
"""

from agent_runtime.interrupts import Remember
from bot.agents.policy import AgentSpec, Escalate, Policy, Reminders
from bot.api.schemas import NewRequest, RequestView
from bot.errors import BotError, ConfigError, PolicyError
from bot.process.settings import Settings

from . import webhooks
from .client import Client, RequestRefused, SignoffError
from .starting import start

__all__ = [
    "AgentSpec",
    "BotError",
    "Client",
    "ConfigError",
    "Escalate",
    "NewRequest",
    "Policy",
    "PolicyError",
    "Remember",
    "Reminders",
    "RequestRefused",
    "RequestView",
    "Settings",
    "SignoffError",
    "start",
    "webhooks",
]
