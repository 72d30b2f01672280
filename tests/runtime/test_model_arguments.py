"""A model's tool call whose arguments JSON cannot hold ends the run cleanly, in any store."""

from collections.abc import AsyncIterator

import pytest

from agent_runtime import Agent, OpenAIChatModel, tool
from storage import Storage

from .fake_chat import FakeChatServer, serving


@pytest.fixture
async def server() -> AsyncIterator[FakeChatServer]:
    async with serving() as fake:
        yield fake


async def test_arguments_holding_nan_end_the_run_as_an_error_and_the_thread_takes_a_prompt(
    storage: Storage, server: FakeChatServer
) -> None:
    """Python's JSON parser reads ``NaN`` and ``Infinity``, which JSON cannot hold: such a
    call is the model's error (as arguments that are not JSON are), so the run ends saved
    instead of failing its save mid-run, which refused every later prompt."""
    scaled: list[float] = []

    @tool
    def look() -> str:
        """Look at the service."""
        return "3 replicas"

    @tool
    def scale(replicas: float) -> str:
        """Scale the service."""
        scaled.append(replicas)
        return f"scaled to {replicas}"

    model = OpenAIChatModel(
        base_url=server.base_url, api_key="sk-test", model="gpt-test", timeout=10, retry_delay=0
    )
    agent = Agent(
        model=model,
        tools=[look, scale],
        interrupt_on={"scale": True},
        session_store=storage.sessions,
    )
    server.reply_tool_calls(("c0", "look", "{}"))
    server.reply_tool_calls(("c1", "scale", '{"replicas": NaN}'))
    ended = await agent.invoke("scale it", thread_id="t_nan")
    assert ended.stop_reason == "error" and scaled == []
    assert "scale (call c1)" in ended.message and "NaN" in ended.message
    server.reply_text("fine")
    again = await agent.invoke("how is it?", thread_id="t_nan")
    assert again.stop_reason == "end_turn" and again.message == "fine"
