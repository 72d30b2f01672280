"""The runs API: start an agent and follow its run over HTTP, for jobs outside Slack.

Served beside the operator endpoints only when ``SIGNOFF_API_TOKEN`` is set; every call
carries it as ``Authorization: Bearer <token>``.

- ``POST /api/runs`` with ``{"agent", "input", "channel"?, "requested_by"?}`` runs the
  agent until it finishes or stops for approval (as ``signoff run`` does) and answers
  201 with how it stopped and the URL of its status. An interrupt whose card is not in
  Slack says what Slack answered the last try to post it (``not_posted``); one escalated
  names the channel of the step it reached (``escalation_channel``) and, while Slack has
  not taken that step's card, what Slack answered (``escalation_not_posted``).
- ``GET /api/runs/{agent}/{thread_id}`` answers where that run stands: ``interrupted``
  (waiting for the approvals listed), ``idle`` (finished: ``last_result``), or
  ``running``.

Errors are JSON ``{"error": "..."}``: 401 without the token, 400 for a malformed body
(or no channel for an agent that asks where it runs), 413 for one larger than the server
takes, 404 for an unknown agent or run (a thread another agent ran is unknown to this
one), 422 for a run asked for where it cannot run (a direct message its approvers never
see), 429 for a start while the admin client holds ``SIGNOFF_API_OPEN_CALLS`` calls open
(runs going on, AG-UI streams, long-polls), 500 for a run whose stored state is damaged
(or an agent that failed, or whose build did: named), 503 when Redis cannot be reached.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from pydantic import ConfigDict, Field, SecretStr, ValidationError

from agent_runtime.closed_model import ClosedModel
from agent_runtime.errors import UsageError
from agent_runtime.interrupts import Interrupt
from agent_runtime.results import AgentResult
from bot.agents.registry import BUILD_FAILED
from bot.errors import AgentBuildError, RunRefusedError
from bot.runs.drive import start_run, unknown_agent
from bot.runs.place import Place
from bot.runs.unposted import run_records
from bot.services import Services
from bot.ui.deciders import escalation_channel
from storage.api_clients import ADMIN
from storage.errors import (
    CorruptRecordError,
    InvalidIdError,
    StorageError,
    StorageUnavailableError,
)
from storage.ids import quoted_id
from storage.records import InterruptRecord

from .auth import NOT_OPERATOR, bearer_check
from .bodies import read
from .open_calls import OpenCalls

log = logging.getLogger(__name__)

RUNS_PATH = "/api/runs"


class StartRun(ClosedModel):
    """The body of ``POST /api/runs``."""

    model_config = ConfigDict(frozen=True)

    agent: str = Field(min_length=1, max_length=64)
    input: str = Field(min_length=1, max_length=4000)
    channel: str | None = Field(default=None, pattern=r"^[CGD][A-Z0-9]{2,20}$")
    requested_by: str = Field(default="api", pattern=r"^[A-Za-z0-9_.:\-]{1,64}$")
    """A Slack user id (who may then not approve it themselves) or the job's name."""


def add_runs_routes(
    app: web.Application, services: Services, *, token: SecretStr, open_calls: OpenCalls
) -> None:
    """Add the runs API to ``app``, guarded by ``token``; each start holds one of the admin
    client's ``open_calls`` while its run goes on."""
    authorized = bearer_check(token)

    async def start(request: web.Request) -> web.Response:
        if not authorized(request):
            return _unauthorized()
        slot = open_calls.take(ADMIN)
        if slot is None:  # before any work: the runs already going on go on
            return open_calls.refusal(ADMIN)
        with slot:
            return await run(request)

    async def run(request: web.Request) -> web.Response:
        raw = await read(request)
        if isinstance(raw, web.Response):
            return raw
        try:
            body = StartRun.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            return _error(400, f"{where}: {first['msg']}")
        spec = services.registry.spec(body.agent)
        if spec is None:
            return _error(404, unknown_agent(services, body.agent))
        try:  # built first: a build it refuses is told as the run's status URL tells it
            services.registry.agent(body.agent)
        except BUILD_FAILED as exc:
            log.exception("run of %s not started", body.agent)
            return _error(500, f"{exc}; see the bot's log")
        if body.channel is None and spec.asks_where_it_runs(services.default_channel):
            # Its cards would go where it runs: with no channel, nowhere its policy names.
            return _error(
                400,
                f"channel: {body.agent} asks for approval in the channel it runs in (its "
                "policy names none, and SIGNOFF_CHANNEL is unset): give one",
            )
        place = Place(channel=body.channel, thread_ts=None, requested_by=body.requested_by)
        try:
            result = await start_run(services, body.agent, body.input, place=place)
        except RunRefusedError as exc:  # where it was asked to run: the caller's to change
            return _error(422, str(exc))
        except StorageUnavailableError as exc:
            log.error("run of %s not started: %s", body.agent, exc)
            return _error(503, "storage is unavailable; nothing was started")
        except Exception as exc:  # the agent failed; JSON like every other answer
            log.exception("run of %s failed", body.agent)
            return _error(
                500, f"the run of {body.agent} failed ({type(exc).__name__}); see the bot's log"
            )
        status_url = f"{RUNS_PATH}/{body.agent}/{result.thread_id}"
        answer = _result(result, await run_records(services, result.run_id, result.interrupts))
        return web.json_response({**answer, "status_url": status_url}, status=201)

    async def status(request: web.Request) -> web.Response:
        if not authorized(request):
            return _unauthorized()
        agent, thread_id = request.match_info["agent"], request.match_info["thread_id"]
        if services.registry.spec(agent) is None:
            return _error(404, unknown_agent(services, agent))
        try:
            found = await services.registry.thread_status(agent, thread_id)
        except (UsageError, AgentBuildError) as exc:  # its build failed: JSON, not a text page
            log.exception("status of %s not read", quoted_id(thread_id))
            return _error(500, f"{exc}; see the bot's log")
        except InvalidIdError:
            found = None
        except CorruptRecordError as exc:  # asking again will not help: not a 503
            log.error("status of %s not read: %s", quoted_id(thread_id), exc)
            return _error(500, "the run's stored state is damaged; see the bot's log")
        except StorageError as exc:
            log.error("status of %s not read: %s", quoted_id(thread_id), exc)
            return _error(503, "storage is unavailable; try again")
        if found is None:
            return _error(404, f"no run of {agent} in thread {quoted_id(thread_id)}")
        records = await run_records(services, found.run_id, found.interrupts)
        return web.json_response(
            {
                "thread_id": found.thread_id,
                "run_id": found.run_id,
                "status": found.status,
                "interrupts": [_interrupt(i, records) for i in found.interrupts],
                "last_result": _result(found.last_result, {}) if found.last_result else None,
            }
        )

    app.router.add_post(RUNS_PATH, start)
    app.router.add_get(RUNS_PATH + "/{agent}/{thread_id}", status)


def _result(result: AgentResult, records: Mapping[str, InterruptRecord]) -> dict[str, Any]:
    return {
        "thread_id": result.thread_id,
        "run_id": result.run_id,
        "stop_reason": result.stop_reason,
        "message": result.message,
        "interrupts": [_interrupt(i, records) for i in result.interrupts],
    }


def _interrupt(interrupt: Interrupt, records: Mapping[str, InterruptRecord]) -> dict[str, Any]:
    """An interrupt, and where its cards stand in Slack (as the requests API says it)."""
    record = records.get(interrupt.id)
    escalated = record is not None and record.escalated
    return {
        "id": interrupt.id,
        "name": interrupt.name,
        "reason": interrupt.reason,
        "not_posted": record.post_error if record and record.message_ts is None else None,
        "escalation_channel": escalation_channel(record) if record and escalated else None,
        "escalation_not_posted": (
            record.escalation_error if record and record.escalation_unposted else None
        ),
    }


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _unauthorized() -> web.Response:
    return _error(401, NOT_OPERATOR)
