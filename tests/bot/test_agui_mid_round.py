"""An app's round on Signoff's own runtime, with no cards, that still runs in a live process
(its stream was cut off, the tool goes on): whatever the app sends on the thread meanwhile
is told the round runs (``round_running``), changes nothing, and, once the round ends, the
resume sent again hears how it ended. A round whose process died is continued instead:
``tests/processes/test_agui_killed.py``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from agui_endpoint import Endpoint, cut_off, round_ran, run_client
from harness import ALICE, one_delete_spec

from agent_runtime import ToolContext, tool
from bot.agents.policy import AgentSpec, Policy


class HeldDelete:
    """The cleanup agent whose tool waits inside its body until released."""

    def __init__(self) -> None:
        self.entered, self.release = asyncio.Event(), asyncio.Event()
        self.attempts: list[int] = []

    def spec(self) -> AgentSpec:
        @tool
        async def delete_files(paths: list[str], context: ToolContext) -> str:
            """Delete the given files."""
            self.attempts.append(context.attempt)
            self.entered.set()
            await self.release.wait()
            return f"deleted {len(paths)} file(s)"

        return one_delete_spec(delete_files, Policy(users=(ALICE,)))


async def test_while_a_cut_off_round_runs_the_apps_requests_are_told_it_runs(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    held = HeldDelete()
    endpoint = await endpoint_for(spec=held.spec())
    url = endpoint.url
    [first] = await run_client(url, "thread-live", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    resume = [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    ]
    await cut_off(url, "thread-live", resume)
    await asyncio.wait_for(held.entered.wait(), 10)  # the approved tool runs, unwatched
    status = await endpoint.bot.services.registry.agent("cleanup").thread_status("thread-live")
    assert status is not None and status.status == "running"

    again, prompt = await run_client(
        url, "thread-live", [{"resume": resume}, {"prompt": "clean up again"}]
    )
    for meanwhile in (again, prompt):
        assert meanwhile["finished"] is None, meanwhile
        assert meanwhile["error"]["code"] == "round_running", meanwhile
        assert "send this again once it ends" in meanwhile["error"]["message"]
    assert held.attempts == [1]  # neither continued the round nor ran anything

    ended = round_ran(endpoint.bot)
    held.release.set()
    await asyncio.wait_for(ended.wait(), 10)  # the round ends, unwatched
    [after] = await run_client(url, "thread-live", [{"resume": resume}])
    assert after["error"] is None, after
    assert after["finished"]["outcome"] == {"type": "success"}, after
    assert after["finished"]["result"] == "done: deleted 1 file(s)"
    assert held.attempts == [1]  # once, however often the resume was sent


async def test_a_request_that_saw_the_round_run_is_told_so_when_it_ends_before_the_hold(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app's resume, sent again, finds the thread mid-round; the round ends (and lets
    go of the thread) before the request takes the thread: it is told the round ran, to
    send it again to hear how it ended, and nothing is continued."""
    held = HeldDelete()
    endpoint = await endpoint_for(spec=held.spec())
    url, services = endpoint.url, endpoint.bot.services
    [first] = await run_client(url, "thread-race", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    resume = [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    ]
    await cut_off(url, "thread-race", resume)
    await asyncio.wait_for(held.entered.wait(), 10)

    redis, app_runs = services.storage.client, services.storage.app_runs
    evaluate, running, let_go = redis.eval, app_runs.running, asyncio.Event()

    async def eval_and_tell(script: str, keys: list[str], args: list[Any]) -> Any:
        done = await evaluate(script, keys, args)
        if script == "lease_release" and keys[0].endswith(":app_run"):
            let_go.set()
        return done

    @contextlib.asynccontextmanager
    async def after_the_round(thread_id: str) -> AsyncIterator[bool]:
        held.release.set()  # the round ends between the look at the thread and the hold
        await asyncio.wait_for(let_go.wait(), 10)
        async with running(thread_id) as ok:
            yield ok

    redis.eval = eval_and_tell  # type: ignore[method-assign]
    app_runs.running = after_the_round  # type: ignore[method-assign]
    [late] = await run_client(url, "thread-race", [{"resume": resume}])
    app_runs.running = running  # type: ignore[method-assign]
    assert late["finished"] is None, late
    assert late["error"]["code"] == "round_running", late
    assert "send this again" in late["error"]["message"]
    assert held.attempts == [1]

    [after] = await run_client(url, "thread-race", [{"resume": resume}])
    assert after["finished"]["result"] == "done: deleted 1 file(s)", after
    assert held.attempts == [1]
