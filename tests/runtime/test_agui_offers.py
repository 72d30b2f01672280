"""What the serving app's policy makes of an AG-UI interrupt: when it expires, and whether
an answer may ``remember`` (the app may give trust on another surface alone)."""

from datetime import UTC, datetime, timedelta

from agent_runtime.agui import run_agui

from .test_agui import cleanup_agent, resume, run, start, types


async def test_an_answer_past_its_expiry_is_refused_but_a_cancel_is_not():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted)
    await run(agent, start())
    [interrupt] = await agent.open_interrupts("t1")
    gone = datetime.now(UTC) - timedelta(seconds=1)
    approve = {"interruptId": interrupt.id, "status": "resolved", "payload": {"type": "approve"}}
    events = [dict(e) async for e in run_agui(agent, resume([approve]), expiry=lambda _: gone)]
    assert events[-1]["type"] == "RUN_ERROR" and "expired" in events[-1]["message"]
    cancel = {"interruptId": interrupt.id, "status": "cancelled", "payload": "too late"}
    events = [
        dict(e)
        async for e in run_agui(agent, resume([cancel], run_id="run-3"), expiry=lambda _: gone)
    ]
    assert events[-1]["type"] == "RUN_FINISHED" and deleted == []


async def test_where_the_app_gives_trust_elsewhere_a_remember_is_neither_offered_nor_taken():
    deleted: list[list[str]] = []
    agent = cleanup_agent(deleted)
    elsewhere = {"remembers": lambda _: False}
    events = [dict(e) async for e in run_agui(agent, start(), **elsewhere)]
    [interrupt] = events[-1]["outcome"]["interrupts"]
    assert "remember" not in interrupt["responseSchema"]["properties"]
    trusted = {"type": "approve", "remember": {"scope": "run"}}
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": trusted}
    events = [dict(e) async for e in run_agui(agent, resume([answer]), **elsewhere)]
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "does not offer remember" in events[-1]["message"] and deleted == []
    assert [i.id for i in await agent.open_interrupts("t1")] == [interrupt["id"]]
    answer["payload"] = {"type": "approve"}
    events = [dict(e) async for e in run_agui(agent, resume([answer], run_id="run-3"), **elsewhere)]
    assert events[-1]["outcome"] == {"type": "success"} and deleted == [["a.log"]]
