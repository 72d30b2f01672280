"""``GET /api/openapi.json``: the requests API described from the same pydantic models
the server validates with, so the document cannot drift from what is enforced."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .bodies import MAX_BODY
from .json_errors import TIMED_OUT
from .long_polls import MAX_WAIT
from .request_records import REQUESTS_PATH
from .schemas import ApiError, JobStart, NewRequest, OutcomeReport, RequestView, Withdrawal

OPENAPI_PATH = "/api/openapi.json"
_MODELS: tuple[type[BaseModel], ...] = (
    NewRequest,
    RequestView,
    Withdrawal,
    JobStart,
    OutcomeReport,
    ApiError,
)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the requests API."""
    _, schemas = models_json_schema(
        [(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}"
    )
    request_id = {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^req_[0-9a-f]{32}$"},
    }
    item = f"{REQUESTS_PATH}/{{id}}"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Signoff requests API",
            "version": "1",
            "description": "Ask for an approval in Slack from any job, and learn the answer.",
        },
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas["$defs"],
            "responses": _SHARED,
        },
        "paths": {
            REQUESTS_PATH: {
                "post": {
                    "summary": "Ask for an approval: posts a card",
                    "operationId": "createRequest",
                    "requestBody": _body("NewRequest"),
                    "responses": {
                        "201": _view("Posted"),
                        "200": _view("The same idempotency key again: the existing request"),
                        **_errors(400, 401, 403, 404, 409, 413, 429, 500, 503),
                    },
                }
            },
            item: {
                "get": {
                    "summary": "Where a request stands; with wait, as soon as it is decided",
                    "operationId": "getRequest",
                    "parameters": [
                        request_id,
                        {
                            "name": "wait",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "number", "minimum": 0, "maximum": MAX_WAIT},
                        },
                    ],
                    "responses": {
                        "200": _view("The request"),
                        **_errors(400, 401, 404, 429, 500, 503),
                    },
                }
            },
            f"{item}/withdraw": {
                "post": {
                    "summary": "Withdraw a pending request; the card says so",
                    "operationId": "withdrawRequest",
                    "parameters": [request_id],
                    "requestBody": {**_body("Withdrawal"), "required": False},
                    "responses": {
                        "200": _view("Withdrawn"),
                        "409": _view(
                            "No longer pending, or some of its items decided first: the "
                            "request as it is, and an error"
                        ),
                        **_errors(400, 401, 404, 413, 500, 503),
                    },
                }
            },
            f"{item}/start": {
                "post": {
                    "summary": "Say, once, that the approved job starts its command",
                    "operationId": "startJob",
                    "parameters": [request_id],
                    "requestBody": _body("JobStart"),
                    "responses": {
                        "200": _view("Started"),
                        "409": _view(
                            "Not approved, superseded by a later request (superseded_by), "
                            "started already (by another attempt) or its outcome reported: "
                            "the request as it is, and an error"
                        ),
                        **_errors(400, 401, 404, 413, 500, 503),
                    },
                }
            },
            f"{item}/outcome": {
                "post": {
                    "summary": "Report, once, what the approved job did",
                    "operationId": "reportOutcome",
                    "parameters": [request_id],
                    "requestBody": _body("OutcomeReport"),
                    "responses": {
                        "200": _view("Reported"),
                        **_errors(400, 401, 404, 409, 413, 500, 503),
                    },
                }
            },
        },
    }


def add_openapi_route(app: web.Application) -> None:
    document = openapi_document()

    async def serve(_: web.Request) -> web.Response:
        return web.json_response(document)

    app.router.add_get(OPENAPI_PATH, serve)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _body(name: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": _ref(name)}}}


def _view(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _ref("RequestView")}},
    }


def _errors(*statuses: int) -> dict[str, Any]:
    """The operation's own errors, and the ones the server answers on every path."""
    own = {str(status): _error(_ERRORS[status]) for status in statuses}
    return {
        **own,
        **{status: {"$ref": f"#/components/responses/{name}"} for status, name in _ON_EVERY_PATH},
    }


def _error(description: str, **more: Any) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _ref("ApiError")}},
        **more,
    }


_ERRORS = {
    400: "Bad input; the error names the field",
    401: "No valid API token",
    403: "The client may not post to that channel",
    404: (
        "No such request (or another client's; for a new one, the one it supersedes), or "
        "no endpoint at that path"
    ),
    409: "The request is not in a state that allows this",
    413: f"The body is larger than the server takes ({MAX_BODY} bytes)",
    429: (
        "The client is at one of its limits (long-polls open, requests pending): the error "
        "names the limit and the setting that raises it; ask again after Retry-After "
        "(long-polls) or once some of its requests are decided or withdrawn"
    ),
    500: "Stored data the call needs is damaged; asking again will not help",
    503: (
        "Storage is unreachable, or another request asking again for the approved one this "
        "one supersedes is being made; nothing was changed, ask again (after Retry-After)"
    ),
}

_ON_EVERY_PATH = (("405", "MethodNotAllowed"), ("504", "TimedOut"))
"""Answers of the server's own (``json_errors``) that any path may give, shared by name."""
_SHARED = {
    "MethodNotAllowed": _error(
        "The path does not take this method; Allow lists the ones it does",
        headers={"Allow": {"required": True, "schema": {"type": "string"}}},
    ),
    "TimedOut": _error(f"The server timed out: {TIMED_OUT}"),
}
