"""``signoff.start``: begin a run from Python, as the slash command and the CLI do."""

from __future__ import annotations

import os

from agent_runtime.results import AgentResult
from bot.agents.policy import AgentSpec
from bot.process.settings import Settings
from bot.process.wiring import open_services
from bot.runs.drive import start_run
from bot.runs.place import Place


async def start(
    agent: str | AgentSpec,
    input: str,
    *,
    channel: str,
    requested_by: str,
    settings: Settings | None = None,
) -> AgentResult:
    """Run ``agent`` on ``input`` until it finishes or stops for approval.

    ``agent`` is an ``AgentSpec``, or the name of one declared by the SIGNOFF_AGENTS
    module. Its interrupts are stored, then posted to ``channel`` (or where its policy
    says); the bot that serves Slack takes the decisions and resumes the run. Settings
    come from the environment (SLACK_BOT_TOKEN, REDIS_URL, ...) unless given.
    """
    config = settings or Settings.from_env(os.environ)
    specs = [agent] if isinstance(agent, AgentSpec) else None
    name = agent.name if isinstance(agent, AgentSpec) else agent
    place = Place(channel=channel, thread_ts=None, requested_by=requested_by)
    async with open_services(config, specs=specs) as services:
        try:
            return await start_run(services, name, input, place=place)
        finally:
            await services.background.close()
