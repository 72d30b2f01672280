"""Bad AG-UI requests are told what is wrong and change nothing: an unknown agent, a
body too large, a resume naming an interrupt the thread does not have."""

from __future__ import annotations

import aiohttp
from agui_endpoint import TOKEN, Endpoint, ask_one, run_raw, still_pending

AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


async def test_an_unknown_agent_or_a_huge_body_is_refused_before_anything_runs(
    endpoint: Endpoint,
) -> None:
    other = endpoint.url.rsplit("/", 1)[0] + "/nope"
    async with aiohttp.ClientSession() as http:
        async with http.post(other, data=b"{}", headers=AUTH) as unknown:
            assert unknown.status == 404
            assert "no agent named 'nope'" in (await unknown.json())["error"]
        huge = b'{"threadId": "t", "runId": "r", "pad": "' + b"x" * 5_000_000 + b'"}'
        async with http.post(endpoint.url, data=huge, headers=AUTH) as large:
            assert large.status == 413
            assert "error" in await large.json()
    assert endpoint.bot.tool_log.calls == []
    assert endpoint.bot.slack.called("chat.postMessage") == []


async def test_a_resume_naming_another_threads_interrupt_is_a_run_error_and_decides_nothing(
    endpoint: Endpoint,
) -> None:
    mine, my_card = await ask_one(endpoint, "thread-mine")
    for iid in (mine["id"], "no-such-interrupt"):
        resume = [{"interruptId": iid, "status": "resolved", "payload": {"type": "approve"}}]
        events = await run_raw(
            endpoint, {"threadId": "thread-other", "runId": "r", "resume": resume}
        )
        assert [e["type"] for e in events][-1] == "RUN_ERROR", events
        assert "thread-other has no open interrupts" in events[-1]["message"]
        assert "RUN_FINISHED" not in [e["type"] for e in events]
    both = [
        {"interruptId": i, "status": "resolved", "payload": {"type": "approve"}}
        for i in (mine["id"], "no-such-interrupt")
    ]
    events = await run_raw(endpoint, {"threadId": "thread-mine", "runId": "r", "resume": both})
    assert events[-1]["type"] == "RUN_ERROR" and "no-such-interrupt" in events[-1]["message"]
    assert await still_pending(endpoint, my_card)
    assert endpoint.bot.tool_log.calls == []
