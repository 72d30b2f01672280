"""A resume that keeps failing is given up after five attempts, visibly, not retried forever."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from harness import ALICE, CHANNEL, Harness, ToolLog, cleanup_spec
from pydantic import SecretStr

from agent_runtime import Agent, NodeContext, Workflow
from agent_runtime.errors import ResumeError, UsageError
from agent_runtime.session import SessionStore, Snapshot, StoredSession
from bot.agents.policy import AgentSpec, Policy
from bot.api.runs import RUNS_PATH
from bot.errors import AgentBuildError
from bot.process.web import operator_app
from bot.runs import workers
from bot.ui import ids

GIVEN_UP = "Could not resume this run after 5 attempts: StoreDown; see the worker log"
TOKEN = SecretStr("api-token-" + "x" * 24)


class StoreDown(Exception):
    """The session store cannot be read."""


class BrokenStore:
    """A session store that fails every call, so every resume of the run raises."""

    async def load(self, thread_id: str) -> StoredSession | None:
        raise StoreDown(f"cannot load {thread_id}")

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        raise StoreDown(f"cannot save {thread_id}")

    async def delete(self, thread_id: str) -> None:
        raise StoreDown(f"cannot delete {thread_id}")


async def test_a_resume_that_always_fails_is_dead_lettered_after_five_attempts(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot: Harness = await make_bot(workers=1, reclaim_after=0.01)
    value = await bot.start()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None
    bot.services.registry.agent("cleanup").session_store = BrokenStore()
    caplog.set_level(logging.WARNING, logger="bot.runs.workers")

    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(lambda: GIVEN_UP in bot.thread(), what="the given-up message")
    await bot.loops.stop()

    assert bot.thread().count(GIVEN_UP) == 1
    queue = bot.services.storage.resume
    assert await queue.pending_count() == 0
    [dead] = await queue.dead_letters()
    assert (dead["run_id"], dead["error"], dead["attempts"]) == (record.run_id, "StoreDown", "5")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(record.run_id in m and "dead-letter" in m for m in errors)
    retried = [r for r in caplog.records if "will be retried" in r.getMessage()]
    assert len(retried) == 4
    async with bot.http.get(bot.url + "/metrics") as response:
        metrics = await response.text()
    assert "signoff_resume_dead_letters_total 1" in metrics
    assert "signoff_click_to_resume_seconds_count 0" in metrics  # it never resumed


class FailsOnce:
    """A session store whose first load fails; it answers as ``store`` from then on."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.failed = False

    async def load(self, thread_id: str) -> StoredSession | None:
        if not self.failed:
            self.failed = True
            raise StoreDown(f"cannot load {thread_id}")
        return await self.store.load(thread_id)

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        return await self.store.save(thread_id, snapshot, expected_version=expected_version)

    async def delete(self, thread_id: str) -> None:
        await self.store.delete(thread_id)


async def test_a_resume_that_succeeds_on_its_second_attempt_is_timed_once(make_bot: Any) -> None:
    """``signoff_click_to_resume_seconds`` times each decision to its run resuming: a
    failed attempt is not a resume, so the histogram holds the one that resumed it."""
    bot: Harness = await make_bot(workers=1, reclaim_after=0.01)
    value = await bot.start()
    agent = bot.services.registry.agent("cleanup")
    flaky = agent.session_store = FailsOnce(agent.session_store)

    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 2 file(s)" in await bot.finished()
    assert flaky.failed
    async with bot.http.get(bot.url + "/metrics") as response:
        metrics = await response.text()
    assert "signoff_click_to_resume_seconds_count 1" in metrics


async def test_a_refused_resume_given_up_is_never_logged_as_to_be_retried(
    make_bot: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime refuses every resume and no earlier attempt applied the answers: the
    log says "will be retried" only for the attempts that are, not for the last one."""
    bot: Harness = await make_bot(workers=1, reclaim_after=0.01)
    value = await bot.start()
    refused = ResumeError("interrupt int_x is not pending in this run")

    async def refusing(*_: Any, **__: Any) -> None:
        raise refused

    monkeypatch.setattr(workers, "resume_run", refusing)
    caplog.set_level(logging.INFO, logger="bot.runs.workers")
    await bot.click(ids.APPROVE, value, user=ALICE)
    told = f"Could not resume this run after 5 attempts: {refused}; see the worker log"
    await bot.slack.wait_for(lambda: told in bot.thread(), what="the given-up message")
    await bot.loops.stop()

    retried = [r.getMessage() for r in caplog.records if "will be retried" in r.getMessage()]
    assert len(retried) == 4, retried
    assert [r for r in caplog.records if "dead-letter" in r.getMessage()]


async def test_a_resume_the_runtime_refuses_says_why_in_the_thread(make_bot: Any) -> None:
    """The runtime's own errors say what to fix: the thread quotes them, not only their
    type."""
    bot: Harness = await make_bot(workers=1, reclaim_after=0.01)
    value = await bot.start()
    renamed = UsageError("the run stopped at node 'delete', which this workflow lacks")

    class RenamedNode(BrokenStore):
        async def load(self, thread_id: str) -> StoredSession | None:
            raise renamed

    bot.services.registry.agent("cleanup").session_store = RenamedNode()
    await bot.click(ids.APPROVE, value, user=ALICE)
    told = f"Could not resume this run after 5 attempts: {renamed}; see the worker log"
    await bot.slack.wait_for(lambda: told in bot.thread(), what="the given-up message")
    await bot.loops.stop()


async def test_a_resume_by_a_process_without_the_agent_says_what_it_lacks(make_bot: Any) -> None:
    """The card was posted by a process whose SIGNOFF_AGENTS has the agent; the worker's
    does not: the thread says so, not "KeyError"."""
    bot: Harness = await make_bot(workers=1, reclaim_after=0.01)
    value = await bot.start()
    registry = bot.services.registry  # this worker's module lacks it
    registry._specs.pop("cleanup"), registry._agents.pop("cleanup")
    await bot.click(ids.APPROVE, value, user=ALICE)
    lacking = (
        "Could not resume this run after 5 attempts: no agent named 'cleanup' in this "
        "process (its agents: none); SIGNOFF_AGENTS (or --agents) must name the module "
        "that defines it; see the worker log"
    )
    await bot.slack.wait_for(lambda: lacking in bot.thread(), what="the given-up message")
    await bot.loops.stop()


async def test_a_resume_by_a_process_whose_agent_has_a_bad_interrupt_on_names_the_agent(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The card was posted by a process with a good declaration; the worker's module has
    since changed the agent's ``interrupt_on`` into one the runtime refuses: the thread and
    the log say which agent to fix."""
    first: Harness = await make_bot(workers=0)
    value = await first.start()
    spec = first.services.registry.spec("cleanup")
    assert spec is not None
    bad = cleanup_spec(ToolLog(), spec.policy, decisions=())  # allowed_decisions=[]
    worker: Harness = await make_bot(workers=1, reclaim_after=0.01, spec=bad)
    await first.click(ids.APPROVE, value, user=ALICE)
    told = "Could not resume this run after 5 attempts: agent 'cleanup': interrupt_on["
    await worker.slack.wait_for(lambda: any(told in t for t in worker.thread()), what="it")
    await worker.loops.stop()
    logged = [str(r.exc_info[1]) for r in caplog.records if r.exc_info is not None]
    assert logged and all(e.startswith("agent 'cleanup': interrupt_on[") for e in logged)


def _no_api_key(store: SessionStore) -> Agent:
    raise ValueError("no API key")


async def test_a_resume_by_a_process_whose_agent_cannot_be_built_names_the_agent(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's build of the agent raises (its API key is missing): the thread and
    every log line about the attempts name the agent and the error's type; the error's
    own message, which may hold anything, is in the log only."""
    caplog.set_level(logging.WARNING, logger="bot.runs.workers")
    first: Harness = await make_bot(workers=0)
    value = await first.start()
    spec = first.services.registry.spec("cleanup")
    assert spec is not None
    broken = AgentSpec(name="cleanup", build=_no_api_key, policy=spec.policy)
    worker: Harness = await make_bot(workers=1, reclaim_after=0.01, spec=broken)
    await first.click(ids.APPROVE, value, user=ALICE)
    said = "agent 'cleanup': build() raised ValueError"
    told = f"Could not resume this run after 5 attempts: {said}; see the worker log"
    await worker.slack.wait_for(lambda: told in worker.thread(), what="it")
    await worker.loops.stop()

    assert not any("no API key" in t for t in worker.thread())
    [dead] = await worker.services.storage.resume.dead_letters()
    assert dead["error"] == said
    failed = [r.exc_info for r in caplog.records if r.exc_info is not None]
    assert len(failed) == 5
    for exc_info in failed:
        assert isinstance(exc_info[1], AgentBuildError) and str(exc_info[1]) == said
        assert "ValueError: no API key" in logging.Formatter().formatException(exc_info)
    retried = [r.getMessage() for r in caplog.records if "will be retried" in r.getMessage()]
    assert len(retried) == 4 and all(said in m for m in retried)


HOSTILE = "<!channel> <https://evil.example|click> `x` *bold* \u202eexe.txt " + "A" * 100_000


class HostileStore(BrokenStore):
    """A session store whose error (the runtime's own, so it is quoted) is an attack."""

    async def load(self, thread_id: str) -> StoredSession | None:
        raise UsageError(HOSTILE)


async def test_a_dead_letter_quoting_a_hostile_error_pings_no_one_and_fits(
    make_bot: Any,
) -> None:
    """The given-up message quotes the runtime's error: escaped (no @channel, no link),
    its bidirectional control shown, and cut to what a thread message holds."""
    bot: Harness = await make_bot(workers=1, reclaim_after=0.01)
    value = await bot.start()
    bot.services.registry.agent("cleanup").session_store = HostileStore()

    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(
        lambda: any(t.startswith("Could not resume") for t in bot.thread()), what="the message"
    )
    await bot.loops.stop()

    [given_up] = [t for t in bot.thread() if t.startswith("Could not resume")]
    assert "&lt;!channel&gt; &lt;https://evil.example|click&gt;" in given_up
    assert "<" not in given_up and ">" not in given_up
    assert "\u202e" not in given_up and "\\u202eexe.txt" in given_up
    assert len(given_up) <= 3000 and given_up.endswith("…")


def _volumes_workflow(last: str, ran: list[str]) -> AgentSpec:
    """Inspect volumes, then (after an approval) delete them in the node named ``last``."""

    async def inspect(ctx: NodeContext) -> list[str]:
        return ["vol-1"]

    async def delete(ctx: NodeContext) -> str:
        ran.append(ctx.node)
        return "deleted"

    def build(store: SessionStore) -> Workflow:
        nodes = {"inspect": inspect, last: delete}
        return Workflow(nodes=nodes, interrupt_before={last: True}, session_store=store)

    return AgentSpec(name="cleanup", build=build, policy=Policy(channel=CHANNEL, users=(ALICE,)))


async def test_a_workflow_whose_node_a_deploy_renamed_is_dead_lettered_at_once(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The card was posted by code whose workflow stops before ``delete``; the worker's
    code renamed that node ``remove``. No retry can resume it: the job is dead-lettered on
    its first failure, and the thread, the log, the dead letter and the runs API say which
    node is missing, which nodes there are, and that it did not run."""
    caplog.set_level(logging.WARNING, logger="bot.runs.workers")
    ran: list[str] = []
    first: Harness = await make_bot(workers=0, spec=_volumes_workflow("delete", ran))
    value = await first.start()
    record = await first.services.storage.queries.get(first.record_id(value))
    assert record is not None
    worker: Harness = await make_bot(
        workers=1, reclaim_after=0.01, spec=_volumes_workflow("remove", ran)
    )
    await first.click(ids.APPROVE, value, user=ALICE)
    missing = (
        f"thread {record.thread_id} stopped at node 'delete', which this workflow no longer "
        "has (its nodes: 'inspect', 'remove'); 'delete' and the nodes after it did not run"
    )
    told = f"Could not resume this run: {missing}. It will not be retried; see the worker log"
    await worker.slack.wait_for(lambda: told in worker.thread(), what="the given-up message")
    await worker.loops.stop()

    assert ran == [] and worker.thread().count(told) == 1
    queue = worker.services.storage.resume
    assert await queue.pending_count() == 0
    [dead] = await queue.dead_letters()
    assert (dead["run_id"], dead["error"], dead["attempts"]) == (record.run_id, missing, "1")
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "will be retried" in m]
    assert any(record.run_id in m and "without a retry" in m and missing in m for m in messages)

    server = TestServer(operator_app(worker.services, api_token=TOKEN), host="127.0.0.1", port=0)
    await server.start_server()
    try:
        url = f"http://127.0.0.1:{server.port}{RUNS_PATH}/cleanup/{record.thread_id}"
        auth = {"Authorization": f"Bearer {TOKEN.get_secret_value()}"}
        async with aiohttp.ClientSession() as http, http.get(url, headers=auth) as answer:
            assert answer.status == 500
            assert (await answer.json())["error"] == f"{missing}; see the bot's log"
    finally:
        await server.close()
