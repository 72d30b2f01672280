"""The requests API fuzzed from its own OpenAPI document by schemathesis, over real HTTP
and real Redis: no 5xx, every answer as documented, and no call that was refused changes
anything stored (every key under the bot's prefix, compared byte for byte)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import aiohttp
import redis
import schemathesis
from aiohttp.test_utils import TestServer
from harness import ALICE, CHANNEL, Harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from bot.api.openapi import OPENAPI_PATH
from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app

EXAMPLES = 60
"""Generated calls per operation (four operations)."""


async def test_no_fuzzed_call_gets_a_5xx_breaks_the_document_or_changes_anything_if_refused(
    make_bot: Any, redis_url: str
) -> None:
    bot: Harness = await make_bot()
    storage = bot.services.storage
    _, token = await storage.api_clients.create(
        "fuzzer", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    server = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await server.start_server()
    base = f"http://127.0.0.1:{server.port}"
    auth = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http:
        body = {"title": "Rotate keys", "channel": CHANNEL, "approvers": [ALICE]}
        async with http.post(base + REQUESTS_PATH, json=body, headers=auth) as r:
            assert r.status == 201
            known = (await r.json())["id"]
        async with http.get(base + OPENAPI_PATH) as r:
            document = await r.json()
    await bot.loops.stop()  # nothing but the fuzzed calls changes what is stored
    try:
        report = await asyncio.to_thread(
            _fuzz, document, base, auth, redis_url, storage.keys.prefix, known
        )
    finally:
        await server.close()
    assert report["calls"] >= 4 * EXAMPLES
    assert report["refused"] > 0 and report["accepted"] > 0


def _fuzz(
    document: dict[str, Any], base: str, auth: dict[str, str], url: str, prefix: str, known: str
) -> dict[str, int]:
    """Run in a thread: schemathesis calls are blocking, the server answers on the loop."""
    schema = schemathesis.openapi.from_dict(document)
    checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
    stored = redis.Redis.from_url(url)

    def everything() -> dict[bytes, Any]:
        keys = sorted(stored.scan_iter(match=f"{prefix}:*", count=1000))
        return {key: stored.dump(key) for key in keys}

    report = {"calls": 0, "refused": 0, "accepted": 0}
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(), ours=st.booleans(), signed=st.booleans())
        def call(case: Any, ours: bool, signed: bool) -> None:
            if ours and "id" in (case.path_parameters or {}):
                case.path_parameters["id"] = known
            wait = (case.query or {}).get("wait")
            if isinstance(wait, int | float) and wait > 0.05:
                case.query["wait"] = 0.05  # a long-poll's length is not what is fuzzed here
            before = everything()
            response = case.call(base_url=base, headers=auth if signed else {})
            report["calls"] += 1
            assert response.status_code < 500, (case.as_curl_command(), response.text)
            case.validate_response(response, checks=checks)
            if response.status_code >= 400:
                report["refused"] += 1
                assert everything() == before, case.as_curl_command()
            else:
                report["accepted"] += 1

        call()
    stored.close()
    return report
