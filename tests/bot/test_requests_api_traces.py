"""What a job's request leaves for operators: spans that join the job's trace, and log lines
that carry its ids."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from typing import Any

from harness import ALICE, CHANNEL
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from requests_jobs import Jobs

from bot.api.request_records import REQUESTS_PATH
from bot.process.logs import configure_logging
from bot.ui import ids


class DecisionSpans(InMemorySpanExporter):
    """Keeps the finished spans; ``decided`` is set once a decision's span has ended."""

    def __init__(self) -> None:
        super().__init__()
        self.decided = asyncio.Event()

    def export(self, spans: Any) -> Any:
        result = super().export(spans)
        if any(s.name == "signoff.decision" for s in spans):
            self.decided.set()
        return result


async def test_a_requests_spans_join_the_trace_the_job_sent(jobs: Jobs) -> None:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the first test in this process to trace
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = DecisionSpans()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    job_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{job_trace}-00f067aa0ba902b7-01"
    body = {"title": "Delete 42 stale volumes", "channel": CHANNEL, "approvers": [ALICE]}
    headers = {**jobs.auth, "traceparent": parent}
    async with jobs.http.post(jobs.base + REQUESTS_PATH, json=body, headers=headers) as r:
        assert r.status == 201
        made = await r.json()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await asyncio.wait_for(jobs.get(made["status_url"] + "?wait=10"), 15)

    def spans() -> dict[str, Any]:
        return {s.name: s for s in exporter.get_finished_spans()}

    await asyncio.wait_for(exporter.decided.wait(), 10)  # ended once the card is updated
    created, decided = spans()["signoff.request.create"], spans()["signoff.decision"]
    for span in (created, decided):
        assert format(span.context.trace_id, "032x") == job_trace  # in the job's trace
        assert format(span.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert decided.attributes["signoff.user"] == ALICE
    assert decided.attributes["signoff.record_id"].startswith(made["id"])


async def test_every_log_line_about_a_request_carries_its_ids(jobs: Jobs) -> None:
    stream, root = io.StringIO(), logging.getLogger()
    kept = root.handlers[:], root.level
    configure_logging({"SIGNOFF_LOG_FORMAT": "json"}, stream)
    try:
        status, made = await jobs.ask()
        assert status == 201, made
        status, _ = await jobs.post(made["status_url"] + "/withdraw", {"reason": "not now"})
        assert status == 200
    finally:
        root.handlers, root.level = kept
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    about = [
        line for line in lines if made["id"] in line["event"] and line["logger"] != "aiohttp.access"
    ]
    assert len(about) >= 3, lines  # stored, posted, withdrawn
    assert all(line.get("run_id") == made["id"] for line in about), about
    assert all(line.get("record_id", "").startswith(made["id"]) for line in about), about
