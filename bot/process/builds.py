"""Building a process's agents as it starts, so a declaration the runtime refuses (a bad
``interrupt_on``) stops ``serve``, ``socket`` and ``worker`` with one line naming the
agent, instead of failing the first run, card or resume that needs it."""

from __future__ import annotations

import logging

from agent_runtime.errors import UsageError
from bot.errors import AgentBuildError, BotError
from bot.services import Services

log = logging.getLogger(__name__)


def build_agent(services: Services, name: str) -> None:
    """Build agent ``name``; a build that fails is a BotError of one line naming the agent
    and the cause."""
    try:
        services.registry.agent(name)
    except UsageError as exc:
        raise BotError(str(exc)) from exc
    except AgentBuildError as exc:
        raise BotError(exc.in_full()) from exc


def build_agents(services: Services) -> None:
    """Build every agent: one the runtime refuses is a BotError naming it (only its code can
    fix it); one whose own build fails (a missing API key, a service down) is logged and
    built again when next used, so the process still serves the others and the jobs."""
    for name in services.registry.names:
        try:
            services.registry.agent(name)
        except UsageError as exc:
            raise BotError(str(exc)) from exc
        except AgentBuildError as exc:
            log.error("%s; its runs fail until it builds", exc.in_full())
