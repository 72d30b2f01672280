"""The agents the bot may run, loaded from the module named by ``SIGNOFF_AGENTS``.

The module exposes ``agents``: a sequence of ``AgentSpec``. Each agent is built once over
the bot's session store (as the process starts: ``bot.process.builds``) and reused for
every thread.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from collections.abc import Iterable

from agent_runtime.errors import UsageError
from agent_runtime.runnable import Runnable, ThreadStatus
from agent_runtime.session import SessionStore
from bot.errors import AgentBuildError, AgentsModuleError, PolicyError, UnknownAgentError

from .policy import AgentSpec
from .sessions import AgentSessions, ran_by

log = logging.getLogger(__name__)

BUILD_FAILED = (UsageError, AgentBuildError)
"""What ``Registry.agent`` raises when the agent's build fails (the runtime refused what
it built, or the agent's own code failed), each naming the agent."""


class Registry:
    """Agent specs by name, and the agents built from them."""

    def __init__(self, specs: Iterable[AgentSpec], *, sessions: SessionStore) -> None:
        self._specs: dict[str, AgentSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise PolicyError(f"two agents are named {spec.name!r}")
            self._specs[spec.name] = spec
        self._sessions = sessions
        self._agents: dict[str, Runnable] = {}
        self._refused: dict[str, Runnable] = {}  # built, but refused for its tool policies

    @property
    def names(self) -> list[str]:
        return sorted(self._specs)

    def spec(self, name: str) -> AgentSpec | None:
        return self._specs.get(name)

    def agent(self, name: str) -> Runnable:
        """The agent (or workflow) called ``name``, built on first use; UnknownAgentError
        naming this process's agents when it has none so called (its SIGNOFF_AGENTS lacks
        it). A build the runtime refuses (a bad ``interrupt_on``, say), or one lacking a
        tool its ``AgentSpec(tools=...)`` names, offering trust for the run it cannot keep,
        or offering a tool it asks about none of the decisions that tool allows (kept for
        ``aclose``, not built again), is a UsageError naming the agent: with
        several, the runtime's own message does not say which one is wrong; any other
        error of the build (a missing API key), or a build that returns no agent, is an
        AgentBuildError naming it."""
        agent = self._agents.get(name)
        if agent is None:
            spec = self._specs.get(name)
            if spec is None:
                known = ", ".join(self.names) or "none"
                raise UnknownAgentError(
                    f"no agent named {name!r} in this process (its agents: {known}); "
                    "SIGNOFF_AGENTS (or --agents) must name the module that defines it"
                )
            refused = self._refused.get(name)
            built = refused if refused is not None else self._build(spec)
            try:
                _check_tool_policies(spec, built)
                _check_run_trust(spec, built)
                _check_offers(spec, built)
            except UsageError:  # kept, not built again, so that ``aclose`` releases it
                self._refused[name] = built
                raise
            agent = self._agents[name] = built
        return agent

    def _build(self, spec: AgentSpec) -> Runnable:
        """What ``spec.build`` returns, or the UsageError or AgentBuildError naming it."""
        name = spec.name
        try:
            built = spec.build(AgentSessions(self._sessions, name))
        except UsageError as exc:
            raise UsageError(f"agent {name!r}: {exc}") from exc
        except Exception as exc:  # the agent's own code failed
            raise AgentBuildError(name, f"build() raised {type(exc).__name__}", exc) from exc
        if not isinstance(built, Runnable):
            returned = f"build() returned {type(built).__name__}, not an Agent or a Workflow"
            raise AgentBuildError(name, returned)
        return built

    async def thread_status(self, name: str, thread_id: str) -> ThreadStatus | None:
        """Where agent ``name``'s run on ``thread_id`` stands; None when the thread is
        unknown or another agent's (one API token covers every agent). An adapted agent
        whose framework keeps the thread's state may have saved nothing here yet."""
        stored = await self._sessions.load(thread_id)
        if stored is not None and not ran_by(stored, name):
            return None
        return await self.agent(name).thread_status(thread_id)

    async def aclose(self) -> None:
        """Let each agent built so far, refused ones too, release what it holds (the bot
        is stopping)."""
        for name, agent in [*self._agents.items(), *self._refused.items()]:
            try:
                await agent.aclose()
            except Exception:
                log.exception("agent %r failed to close", name)


def _check_tool_policies(spec: AgentSpec, built: Runnable) -> None:
    """UsageError naming a key of ``spec.tools`` that is none of the agent's tools: a
    misspelt name's calls would get the agent's policy, perhaps looser, instead of
    failing. An agent that cannot tell its tools before a run is checked as far as it can
    tell (``may_name``); a key none of the names it can tell matches is logged, with them."""
    names = built.tool_names()
    if names is None:
        seen = built.some_tool_names()
        unchecked = sorted(set(spec.tools) - seen)
        impossible = [key for key in unchecked if not built.may_name(key)]
        if impossible:
            raise UsageError(
                f"agent {spec.name!r}: AgentSpec(tools=...) gives a policy to tools it "
                f"lacks: {impossible}; none of its tools it tells now ({sorted(seen)}) nor "
                "any its runs may name has that name (calls of a tool without its own "
                "policy get the agent's)"
            )
        if unchecked:
            log.warning(
                "agent %r: AgentSpec(tools=...) keys %s cannot be checked: its tools are "
                "known only as it runs (those it tells now: %s); a key no card names leaves "
                "that tool's calls under the agent's policy",
                spec.name,
                unchecked,
                sorted(seen),
            )
        return
    unknown = sorted(set(spec.tools) - names)
    if unknown:
        raise UsageError(
            f"agent {spec.name!r}: AgentSpec(tools=...) gives a policy to tools it lacks: "
            f"{unknown}; its tools are {sorted(names)} (calls of a tool without its own "
            f"policy get the agent's){_full_names(unknown, names)}"
        )


def _check_run_trust(spec: AgentSpec, built: Runnable) -> None:
    """UsageError naming the policies of ``spec`` offering trust for the run, when the agent
    asks at each call whatever a decision remembers (an adapted framework's): its cards
    would say "Trusted for the rest of this run" and then ask again."""
    if built.keeps_run_trust():
        return
    policies = [("policy", spec.policy), *((f"tools[{k!r}]", p) for k, p in spec.tools.items())]
    said = [where for where, p in policies if p.trust is not None and p.trust.scope == "run"]
    if said:
        raise UsageError(
            f"agent {spec.name!r}: trust=Remember(scope='run') ({', '.join(said)}) cannot hold "
            f"for a {type(built).__name__}, which asks again at each call of the tool; use "
            "Remember(scope='minutes', minutes=...), which covers the tool's later calls in "
            "that channel (of this run and later ones) until then, or leave trust unset"
        )


def _check_offers(spec: AgentSpec, built: Runnable) -> None:
    """UsageError naming a tool (or node) the agent asks about whose policy offers none of
    the decisions it allows: its cards' buttons could only fail as the run resumed. An
    adapted framework's gates tell theirs only as they ask (``settle`` ends such a run)."""
    for tool, allowed in sorted((built.declared_decisions() or {}).items()):
        policy = spec.policy_for(tool)
        if not policy.offers(allowed):
            raise UsageError(
                f"agent {spec.name!r}: {policy.offers_none(tool, allowed)}, so no card asking "
                "about it could be decided; offer one it allows (Policy(decisions=...), or "
                "its own policy in AgentSpec(tools=...)), or allow more where the agent asks "
                "(allowed_decisions)"
            )


def _full_names(keys: list[str], names: frozenset[str]) -> str:
    """Which of ``names`` to key instead of a key that is one's last segment (a Genkit
    plugin's ``lookup``, carded as ``ops/lookup``), as the refusal's last words."""
    fuller = {k: [n for n in sorted(names) if n.endswith("/" + k)] for k in keys}
    said = [f"{k!r} as {n[0]!r}" for k, n in fuller.items() if len(n) == 1]
    return f"; key each tool by its full name: {', '.join(said)}" if said else ""


def load_specs(module_name: str, *, named_by: str = "SIGNOFF_AGENTS") -> list[AgentSpec]:
    """The ``agents`` declared by ``module_name``, found on the path or else in the working
    directory (a ``my_agents.py`` beside where ``signoff`` starts); AgentsModuleError says
    what is wrong, naming where the module was given (``named_by``: the setting or
    ``--agents``)."""
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = ""
        if module_name.endswith(".py") or "/" in module_name:  # a file's path, not a module
            name = module_name.removesuffix(".py").rpartition("/")[2]
            hint = (
                f": give the module's name ({name}), and start signoff in its folder or put "
                "that on PYTHONPATH"
            )
        raise AgentsModuleError(f"{named_by}: cannot import {module_name!r} ({exc}){hint}") from exc
    except Exception as exc:  # anything the module's own code raises as it runs
        where, said = _line_in(module_name, exc), " ".join(str(exc).split())
        raise AgentsModuleError(
            f"{named_by}: {module_name!r} failed to load{where}: {type(exc).__name__}: {said}"
        ) from exc
    specs = getattr(module, "agents", None)
    if not isinstance(specs, list | tuple):
        raise AgentsModuleError(
            f"{named_by}: {module_name!r} must define agents = [AgentSpec(...), ...]"
        )
    bad = [s for s in specs if not isinstance(s, AgentSpec)]
    if bad:
        raise AgentsModuleError(
            f"{named_by}: {module_name}.agents holds {bad[0]!r}, not an AgentSpec"
        )
    return list(specs)


def _line_in(module_name: str, exc: Exception) -> str:
    """Where in ``module_name`` the error was raised (" at line N"), its declarations
    being where a policy error is fixed; empty when no line of it ran (a SyntaxError
    says where itself)."""
    line = None
    for frame, number in traceback.walk_tb(exc.__traceback__):
        if frame.f_globals.get("__name__") == module_name:
            line = number
    return f" at line {line}" if line is not None else ""
