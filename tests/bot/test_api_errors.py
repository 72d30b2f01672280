"""Every error under the JSON APIs' prefixes (``/api``, ``/agui``) is JSON ``{"error"}``
over real HTTP: unknown paths, wrong methods (with ``Allow``), bodies that are not JSON
whatever their Content-Type or not in their Content-Encoding, and unexpected exceptions
(no traceback, nothing secret);
the operator endpoints outside them keep their text answers."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import schemathesis
from requests_jobs import ADMIN_TOKEN, Jobs

from bot.api import requests as requests_api
from bot.api.json_errors import TIMED_OUT, UNEXPECTED
from bot.api.openapi import OPENAPI_PATH

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
SECRET = "xoxb-secret-in-an-error"


async def _call(jobs: Jobs, method: str, path: str, **kw: Any) -> tuple[int, Any, str, Any]:
    """Status, headers, content type and the body read as JSON (None when it is not)."""
    async with jobs.http.request(method, jobs.base + path, **kw) as r:
        text = await r.text()
        body = await r.json() if r.content_type == "application/json" else None
        return r.status, r.headers, text, body


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/requests", "POST"),
        ("DELETE", "/api/requests/req_1", "GET,HEAD"),
        ("GET", "/api/requests/req_1/withdraw", "POST"),
        ("PUT", "/api/runs", "POST"),
        ("POST", "/api/runs/cleanup/thread_1", "GET,HEAD"),
        ("DELETE", "/agui/cleanup", "GET,HEAD,POST"),
        ("POST", "/api/openapi.json", "GET,HEAD"),
    ],
)
async def test_a_method_a_path_does_not_take_is_a_json_405_with_allow(
    jobs: Jobs, method: str, path: str, allow: str
) -> None:
    status, headers, _, body = await _call(jobs, method, path, headers=jobs.auth)
    assert status == 405
    assert sorted(headers["Allow"].split(",")) == sorted(allow.split(","))
    allowed = allow.replace(",", ", ")
    assert body == {"error": f"{method} is not allowed on {path}; allowed: {allowed}"}


@pytest.mark.parametrize(
    "path", ["/api", "/api/", "/api/nope", "/api/requests/req_1/nope", "/agui", "/agui/a/b"]
)
async def test_an_unknown_path_under_a_json_api_is_a_json_404(jobs: Jobs, path: str) -> None:
    status, _, _, body = await _call(jobs, "GET", path, headers=jobs.auth)
    assert status == 404 and body == {"error": f"no endpoint {path}"}


@pytest.mark.parametrize("path", ["/apiary", "/nope", "/slack/events"])
async def test_paths_outside_the_json_apis_keep_aiohttps_answers(jobs: Jobs, path: str) -> None:
    status, _, text, body = await _call(jobs, "GET", path)
    assert status in (404, 405) and body is None and text.startswith(f"{status}:")


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/api/requests", None),
        ("/api/runs", ADMIN),
        ("/agui/cleanup", ADMIN),
    ],
)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_that_is_not_json_is_a_json_400_whatever_its_content_type(
    jobs: Jobs, path: str, headers: dict[str, str] | None, content_type: str
) -> None:
    sent = {**(headers or jobs.auth), "Content-Type": content_type}
    status, _, _, body = await _call(jobs, "POST", path, data=b"title=x&", headers=sent)
    assert status == 400 and isinstance(body, dict) and body["error"]


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/api/requests", None),
        ("/api/runs", ADMIN),
        ("/agui/cleanup", ADMIN),
    ],
)
async def test_a_body_not_in_its_content_encoding_is_a_json_400_not_a_failure_of_the_server(
    jobs: Jobs, caplog: pytest.LogCaptureFixture, path: str, headers: dict[str, str] | None
) -> None:
    sent = {**(headers or jobs.auth), "Content-Encoding": "gzip"}
    status, answered, _, body = await _call(
        jobs, "POST", path, data=b'{"title": "x"}', headers=sent
    )
    assert status == 400, body
    said = "Can not decode content-encoding: gzip"
    assert body == {"error": f"the body could not be read as its headers describe it: {said}"}
    assert answered["Connection"] == "close"  # where the body ends is unknown
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert jobs.bot.slack.called("chat.postMessage") == []


@pytest.mark.parametrize(
    ("raised", "status", "said"), [(RuntimeError, 500, UNEXPECTED), (TimeoutError, 504, TIMED_OUT)]
)
async def test_an_unexpected_exception_is_a_json_500_or_504_without_traceback_or_secret(
    jobs: Jobs,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    raised: type[Exception],
    status: int,
    said: str,
) -> None:
    def failing(*_: Any) -> Any:
        raise raised(SECRET)

    monkeypatch.setattr(requests_api, "request_channels", failing)
    body = {"title": "t", "channel": "C0OPS", "approvers": ["U0ALICE"]}
    code, _, text, answer = await _call(jobs, "POST", "/api/requests", json=body, headers=jobs.auth)
    assert (code, answer) == (status, {"error": said})
    assert SECRET not in text and "Traceback" not in text
    assert SECRET in caplog.text  # the operator's log says what went wrong


async def test_an_unexpected_exception_in_the_runs_api_is_a_json_500(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def failing(*_: Any) -> Any:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(jobs.bot.services.registry, "thread_status", failing)
    status, _, text, answer = await _call(jobs, "GET", "/api/runs/cleanup/thread_1", headers=ADMIN)
    assert status == 500 and answer == {"error": UNEXPECTED} and SECRET not in text


async def test_an_unexpected_exception_before_an_agui_stream_starts_is_a_json_500(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*_: Any) -> Any:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(jobs.bot.services.registry, "agent", failing)
    run = {"threadId": "thread_1", "runId": "run_1", "messages": []}
    status, _, text, answer = await _call(jobs, "POST", "/agui/cleanup", json=run, headers=ADMIN)
    assert status == 500 and answer == {"error": UNEXPECTED} and SECRET not in text


async def test_the_openapi_document_lists_the_servers_own_json_errors_on_every_path(
    jobs: Jobs,
) -> None:
    """404 (unknown path), 405 (with Allow) and 504 are answered on every path, so the
    document says so, and still loads as OpenAPI."""
    _, _, _, document = await _call(jobs, "GET", OPENAPI_PATH)
    shared = document["components"]["responses"]
    assert "Allow" in shared["MethodNotAllowed"]["headers"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            answers = operation["responses"]
            assert "no endpoint" in answers["404"]["description"], (method, path)
            assert answers["405"] == {"$ref": "#/components/responses/MethodNotAllowed"}
            assert answers["504"] == {"$ref": "#/components/responses/TimedOut"}
    schema = schemathesis.openapi.from_dict(document)
    assert all(result.ok() for result in schema.get_all_operations())
