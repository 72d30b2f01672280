"""OpenAIChatModel against a local fake chat-completions server (never the internet)."""

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent_runtime import (
    Agent,
    Decision,
    ModelError,
    ModelRequest,
    OpenAIChatModel,
    ToolContext,
    tool,
)

from .fake_chat import FakeChatServer, completion, serving

API_KEY = "sk-test-secret-key-0123456789"


@pytest.fixture
async def server() -> AsyncIterator[FakeChatServer]:
    async with serving() as fake:
        yield fake


def model_for(server: FakeChatServer, *, max_retries: int = 3) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.base_url,
        api_key=API_KEY,
        model="gpt-test",
        timeout=10,
        max_retries=max_retries,
        retry_delay=0,
    )


def file_tools(deleted: list[list[str]]):
    @tool
    def list_files(older_than_days: int) -> list[str]:
        """List files older than a number of days."""
        return ["a.log", "b.log"]

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    return [list_files, delete_files]


async def test_tool_calls_and_text_round_trip_through_an_interrupted_run(server):
    deleted: list[list[str]] = []
    agent = Agent(
        model=model_for(server),
        tools=file_tools(deleted),
        interrupt_on={"delete_files": True},
        system_prompt="You clean up old files.",
    )
    server.reply_tool_calls(("call_1", "list_files", '{"older_than_days": 5}'))
    server.reply_tool_calls(("call_2", "delete_files", '{"paths": ["a.log", "b.log"]}'))
    server.reply_text("Deleted 2 old files.")

    first = await agent.invoke("clean up logs older than 5 days", thread_id="t1")
    assert first.stop_reason == "interrupt"
    (pending,) = first.interrupts
    assert pending.tool_call is not None
    assert pending.tool_call.args == {"paths": ["a.log", "b.log"]}
    assert deleted == []

    done = await agent.invoke({pending.id: Decision.approve()}, thread_id="t1")
    assert done.stop_reason == "end_turn"
    assert done.message == "Deleted 2 old files."
    assert deleted == [["a.log", "b.log"]]
    assert server.auth_headers == [f"Bearer {API_KEY}"] * 3

    last = server.requests[-1]
    assert last["model"] == "gpt-test"
    assert last["messages"] == [
        {"role": "system", "content": "You clean up old files."},
        {"role": "user", "content": "clean up logs older than 5 days"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": '{"older_than_days": 5}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '["a.log", "b.log"]'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {
                        "name": "delete_files",
                        "arguments": '{"paths": ["a.log", "b.log"]}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "deleted 2"},
    ]


async def test_tools_are_sent_as_function_specs(server):
    agent = Agent(model=model_for(server), tools=file_tools([]))
    server.reply_text("Nothing to do.")

    result = await agent.invoke("hello", thread_id="t1")

    assert result.message == "Nothing to do."
    body = server.requests[0]
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    by_name = {spec["function"]["name"]: spec for spec in body["tools"]}
    assert by_name["list_files"] == {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List files older than a number of days.",
            "parameters": agent.tools["list_files"].input_schema,
        },
    }
    assert by_name["list_files"]["function"]["parameters"]["required"] == ["older_than_days"]


async def test_no_tools_key_without_tools(server):
    server.reply_text("hi")
    response = await model_for(server).generate(
        ModelRequest(system_prompt=None, messages=(), tools=())
    )
    assert response.text == "hi"
    assert "tools" not in server.requests[0]


async def test_text_and_tool_calls_in_one_turn(server):
    message = {
        "role": "assistant",
        "content": "Listing first.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": ""}}
        ],
    }
    server.reply_json(completion(message))
    response = await model_for(server).generate(
        ModelRequest(system_prompt=None, messages=(), tools=())
    )
    assert response.text == "Listing first."
    assert [(c.id, c.name, c.args) for c in response.tool_calls] == [("c1", "list_files", {})]


async def run_until_error(server: FakeChatServer) -> str:
    """Run an agent against the server's queued reply; the run must end with an error."""
    agent = Agent(model=model_for(server), tools=file_tools([]))
    result = await agent.invoke("clean up", thread_id="t1")
    assert result.stop_reason == "error"
    assert API_KEY not in result.message
    return result.message


async def test_http_500_is_a_clear_error_once_the_retries_are_spent(server):
    for _ in range(4):
        server.replies.append((500, '{"error": {"message": "the engine overheated"}}'))
    message = await run_until_error(server)
    assert "HTTP 500" in message
    assert "the engine overheated" in message
    assert len(server.requests) == 4  # the first attempt and three retries


async def test_a_rate_limited_call_is_retried_after_retry_after(server):
    server.replies.append((429, '{"error": {"message": "slow down"}}', {"Retry-After": "0"}))
    server.replies.append((503, '{"error": {"message": "busy"}}'))
    server.reply_text("All clean.")
    agent = Agent(model=model_for(server), tools=file_tools([]))
    result = await agent.invoke("clean up", thread_id="t1")
    assert result.stop_reason == "end_turn" and result.message == "All clean."
    assert len(server.requests) == 3


async def test_a_client_error_is_not_retried(server):
    server.reply_json({"error": {"message": "bad request"}}, status=400)
    message = await run_until_error(server)
    assert "HTTP 400" in message and len(server.requests) == 1


async def test_http_401_names_the_status_and_never_the_key(server):
    body = {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}
    server.reply_json(body, status=401)
    message = await run_until_error(server)
    assert "HTTP 401" in message
    assert "Incorrect API key provided: ***" in message


async def test_a_body_that_is_not_json_is_a_clear_error(server):
    server.replies.append((200, "<html>502 Bad Gateway</html>"))
    message = await run_until_error(server)
    assert "not JSON" in message
    assert "502 Bad Gateway" in message


async def test_a_completion_without_choices_is_a_clear_error(server):
    server.reply_json({"id": "chatcmpl-1", "object": "chat.completion"})
    message = await run_until_error(server)
    assert "malformed chat completion" in message
    assert "choices" in message


async def test_an_empty_choices_list_is_a_clear_error(server):
    server.reply_json({"choices": []})
    message = await run_until_error(server)
    assert "choices" in message


async def test_tool_arguments_that_are_not_json_are_a_clear_error(server):
    server.reply_tool_calls(("call_9", "delete_files", '{"paths": ["a.log"'))
    message = await run_until_error(server)
    assert "delete_files" in message
    assert "call_9" in message
    assert "not valid JSON" in message


async def test_tool_arguments_that_are_not_an_object_are_a_clear_error(server):
    server.reply_tool_calls(("call_9", "delete_files", '["a.log"]'))
    message = await run_until_error(server)
    assert "must be a JSON object" in message


async def test_an_unreachable_server_is_a_model_error():
    # Bind a port, then free it: nothing listens there when the model calls.
    app = web.Application()
    test_server = TestServer(app, port=0)
    await test_server.start_server()
    base_url = str(test_server.make_url("/v1"))
    await test_server.close()

    model = OpenAIChatModel(
        base_url=base_url, api_key=API_KEY, model="gpt-test", timeout=10, retry_delay=0
    )
    with pytest.raises(ModelError, match="could not reach"):
        await model.generate(ModelRequest(system_prompt=None, messages=(), tools=()))


async def test_a_server_that_never_answers_times_out():
    never = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await never.wait()
        return web.Response()

    app = web.Application()
    app.router.add_post("/v1/chat/completions", hang)
    test_server = TestServer(app, port=0)
    await test_server.start_server()
    model = OpenAIChatModel(
        base_url=str(test_server.make_url("/v1")),
        api_key=API_KEY,
        model="gpt-test",
        timeout=0.2,
        max_retries=0,
    )
    try:
        with pytest.raises(ModelError, match=r"did not answer within 0.2s"):
            await model.generate(ModelRequest(system_prompt=None, messages=(), tools=()))
    finally:
        await test_server.close()


def test_repr_never_shows_the_key():
    model = OpenAIChatModel(base_url="http://localhost/v1", api_key=API_KEY, model="gpt-test")
    assert API_KEY not in repr(model)
    assert "gpt-test" in repr(model)
