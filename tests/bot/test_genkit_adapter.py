"""The real Genkit SDK (a model defined in the test, offline) as a Signoff agent: a tool's
``Interrupt`` is a card, and each decision through the real Bolt app resumes generation
with ``restart_tool`` (approve, edit) or ``respond_to_interrupt`` (deny, reply)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from adapter_checks import first_telling_dies, interrupts_keep_their_time, tool_audits
from genkit import Genkit, Interrupt, Message, ModelRequest, ModelResponse, Part, ToolRunContext
from genkit_agents import define_delete_files, genkit_spec
from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime import Decision
from agent_runtime.errors import ResumeError, ThreadBusyError
from bot.agents.policy import AgentSpec, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from signoff.genkit import GenkitAgent
from storage import Storage


@pytest.mark.parametrize(
    ("how", "ran", "says"),
    [
        ("approve", [["/tmp/a", "/tmp/b"]], "done: deleted 2"),
        ("edit", [["/tmp/a"]], "done: deleted 1"),
        ("reject", [], "done: Not approved: not today"),
        ("respond", [], "done: done by hand"),
    ],
)
async def test_each_decision_resumes_the_genkit_generation_as_it_says(
    make_bot: Any, how: str, ran: list[list[str]], says: str
) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert card["blocks"][0]["text"]["text"] == "Approval needed: delete_files"
    assert "Delete 2 files?" in str(card["blocks"]) and "/tmp/b" in str(card["blocks"])
    await bot.decide(how, value, user=ALICE)
    assert (await bot.finished()).startswith(f"Finished: {says}")
    assert deleted == ran


async def test_a_tool_taking_a_string_shows_it_on_its_card_and_takes_its_edit(
    make_bot: Any,
) -> None:
    """A Genkit tool's input may be a string: the card shows it (as ``input``), not empty
    arguments, the Edit form has it as a text input, and an edit of it restarts the tool
    with the edited string."""
    ai, ran = Genkit(), []

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(name="run_command", input="rm -rf /var/tmp/*", ref="c1")
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="scripted", fn=scripted)

    @ai.tool()
    async def run_command(input: str, ctx: ToolRunContext) -> str:
        """Run a shell command, once a person approves."""
        if not ctx.is_resumed():
            raise Interrupt({"message": "Run this command?"})
        ran.append(input)
        return f"ran {input}"

    spec = AgentSpec(
        name="gk-command",
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["run_command"], session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start(requested_by=CAROL)
    assert "rm -rf /var/tmp/*" in str(bot.posted(0)["blocks"])
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    [form] = [b for b in bot.slack.called("views.open")[-1]["view"]["blocks"] if "element" in b]
    assert form["block_id"] == "arg.input" and form["optional"] is False
    assert form["element"]["initial_value"] == "rm -rf /var/tmp/*"
    edited = {"arg.input": {"type": "plain_text_input", "value": "rm -rf /var/tmp/old"}}
    status, body = await bot.submit_form(value, user=ALICE, values=edited)
    assert status == 200 and "errors" not in body, body
    assert (await bot.finished()).startswith("Finished: done: ran rm -rf /var/tmp/old")
    assert ran == ["rm -rf /var/tmp/old"]


async def test_another_bot_process_resumes_the_generation(make_bot: Any) -> None:
    deleted: list[list[str]] = []
    first: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await first.start(requested_by=CAROL)
    await first.loops.stop()  # the conversation is in Redis: another process resumes it
    second: Harness = await make_bot(spec=genkit_spec(deleted))
    await second.click(ids.APPROVE, value, user=ALICE)
    assert (await second.finished()).startswith("Finished: done: deleted 2")
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_an_interrupt_keeps_the_time_it_was_asked_so_its_expiry_does_not_move(
    storage: Storage,
) -> None:
    await interrupts_keep_their_time(genkit_spec([]).build(storage.sessions))


async def test_a_withdrawal_while_a_resume_holds_the_thread_is_refused_and_changes_nothing(
    storage: Storage,
) -> None:
    """A resume running the tool holds the thread's lease: withdrawing then must not clear
    the interrupt, or the card would say that nothing ran while the tool runs."""
    agent = genkit_spec([]).build(storage.sessions)
    asked = await agent.invoke("clean up", thread_id="thread_busy")
    async with storage.sessions.lease("thread_busy"):
        with pytest.raises(ThreadBusyError):
            await agent.cancel("thread_busy", "withdrawn")
    status = await agent.thread_status("thread_busy")
    assert status is not None
    assert [i.id for i in status.interrupts] == [i.id for i in asked.interrupts]
    assert await agent.cancel("thread_busy", "withdrawn") is not None


async def test_a_withdrawn_generation_takes_a_new_prompt_with_each_call_answered(
    storage: Storage,
) -> None:
    """Model APIs refuse a history whose tool call has no response (as OpenAI's and
    Gemini's do): the withdrawn call must be answered, with why, before the next prompt."""
    ai = Genkit()
    seen: list[str] = []

    async def strict(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Refuses a call left unanswered; asks to delete once, then reports what it saw."""
        for asked, after in zip(request.messages, [*request.messages[1:], None], strict=True):
            calls = {p.tool_request.ref for p in asked.content if p.tool_request}
            answered = {
                p.tool_response.ref for p in (after.content if after else ()) if p.tool_response
            }
            if calls - answered:
                raise ValueError(f"tool calls {sorted(calls - answered)} have no response")
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(name="delete_files", input={"paths": ["/a"]}, ref="c1")
            return ModelResponse(message=Message(role="model", content=[call]))
        seen.append(str(results[-1].output))
        return ModelResponse(message=Message(role="model", content=[Part(text="ok")]))

    ai.define_model(name="strict", fn=strict)
    deleted: list[list[str]] = []
    define_delete_files(ai, deleted)
    agent = GenkitAgent(ai, model="strict", tools=["delete_files"], session_store=storage.sessions)
    await agent.invoke("clean up", thread_id="thread_withdrawn")
    assert await agent.cancel("thread_withdrawn", "withdrawn by Carol") is not None
    again = await agent.invoke("anything else?", thread_id="thread_withdrawn")
    assert again.message == "ok"
    assert seen == ["withdrawn by Carol"] and deleted == []


async def test_answers_on_a_thread_never_run_are_refused_clearly(storage: Storage) -> None:
    agent = genkit_spec([]).build(storage.sessions)
    with pytest.raises(ResumeError, match="has no open interrupts"):
        await agent.invoke({"gk_c1": Decision.approve()}, thread_id="thread_never")


async def test_what_an_approved_genkit_call_did_is_told_and_audited(make_bot: Any) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    await bot.decide("edit", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done: deleted 1")
    assert bot.thread().count("delete_files: deleted 1") == 1
    trail = await bot.services.storage.audit.read(count=100)
    [told] = [e for e in trail if e.event == "tool_ran"]
    assert told.record_id == bot.record_id(value) and told.detail == "delete_files: deleted 1"


@pytest.mark.parametrize("after_telling", [False, True])
async def test_what_a_genkit_call_did_is_told_once_when_its_worker_died_telling_it(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch, after_telling: bool
) -> None:
    """The worker died once the generation was saved, as it told what the approved call
    did (before, or after, telling it): the retried job tells it, once, and the run's end."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted), reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=after_telling)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done: deleted 2")
    assert died == ["died"] and deleted == [["/tmp/a", "/tmp/b"]]
    assert bot.thread().count("delete_files: deleted 2") == 1
    assert await tool_audits(bot) == [(bot.record_id(value), "delete_files: deleted 2")]


async def test_an_expired_card_tells_the_model_not_approved_once(make_bot: Any) -> None:
    """The expiry's denial says "not approved" itself: the tool's output is not prefixed
    again, as a person's reason is."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted))
    await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=24))
    await Scheduler(bot.services).tick()
    said = (await bot.finished()).split("\n")[0]
    assert said == "Finished: done: not approved: the request was expired"
    assert deleted == []
