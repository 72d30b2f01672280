"""A Strands agent's session lives in Redis: another worker resumes it, and the thread's
lease lets only one of two concurrent resumes run the tool."""

from __future__ import annotations

from strands import Agent
from strands.session import SnapshotSessionManager
from strands_agents import SlowDelete

from agent_runtime import Decision
from agent_runtime.errors import ThreadBusyError
from signoff.strands import StrandsAgent
from signoff.strands_storage import RedisStorage
from storage import Storage


async def test_a_strands_session_on_redis_is_resumed_by_another_worker(
    redis_url: str, key_prefix: str
) -> None:
    """Strands' own SnapshotSessionManager, its storage on Redis: a fresh agent (another
    worker) picks the session up at its interrupt and answers it."""
    tool_gate = SlowDelete()
    tool_gate.release.set()
    blobs = RedisStorage(redis_url, prefix=key_prefix)
    first = tool_gate.agent(session_manager=SnapshotSessionManager("ticket-42", storage=blobs))
    asked = await first.invoke_async("clean up")
    assert asked.stop_reason == "interrupt"
    [pending] = asked.interrupts or []
    assert await blobs.list("session/ticket-42/")  # the snapshot is in Redis, not on disk
    other = tool_gate.agent(session_manager=SnapshotSessionManager("ticket-42", storage=blobs))
    answer = {"interruptId": pending.id, "response": {"type": "approve"}}
    done = await other.invoke_async([{"interruptResponse": answer}])
    assert str(done).strip() == "done (success): deleted"
    assert tool_gate.ran == [["/tmp/a"]]
    blobs.close()


async def test_two_concurrent_resumes_run_the_tool_twice_in_strands_and_once_with_the_lease(
    redis_url: str, key_prefix: str, storage: Storage
) -> None:
    """Measured on the real SDK: two workers resuming one Strands session at once both run
    the tool; through the adapter (the thread's lease in Redis) exactly one does."""
    bare = SlowDelete()
    blobs = RedisStorage(redis_url, prefix=key_prefix)

    def worker() -> Agent:
        return bare.agent(session_manager=SnapshotSessionManager("ticket-7", storage=blobs))

    [pending] = (await worker().invoke_async("clean up")).interrupts or []
    answer = [{"interruptResponse": {"interruptId": pending.id, "response": {"type": "approve"}}}]
    await bare.two_at_once(lambda: worker().invoke_async(answer))
    assert bare.ran == [["/tmp/a"], ["/tmp/a"]]
    blobs.close()

    leased = SlowDelete()
    agent = StrandsAgent(leased.agent, session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_leased")).interrupts
    decision = {asked.id: Decision.approve()}
    results = await leased.two_at_once(lambda: agent.invoke(decision, thread_id="thread_leased"))
    assert leased.ran == [["/tmp/a"]]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], ThreadBusyError)
