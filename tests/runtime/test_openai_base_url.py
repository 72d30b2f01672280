"""OpenAIChatModel's base URL: a gateway's query is sent as the query and shown nowhere,
and credentials in the URL are refused when the model is made."""

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent_runtime import ModelError, ModelRequest, OpenAIChatModel

from .fake_chat import FakeChatServer, serving

API_KEY = "sk-test-secret-key-0123456789"


@pytest.fixture
async def server() -> AsyncIterator[FakeChatServer]:
    async with serving() as fake:
        yield fake


async def test_a_base_url_query_is_sent_with_each_request(server):
    """A gateway's query (``?api-version=``) stays the query: the path goes before it."""
    server.reply_text("hello")
    model = OpenAIChatModel(
        base_url=server.base_url + "/?api-version=2024-10-21", api_key=API_KEY, model="gpt-test"
    )
    response = await model.generate(ModelRequest(system_prompt=None, messages=(), tools=()))
    assert response.text == "hello"
    assert server.queries == ["api-version=2024-10-21"]


GATEWAY_KEY = "gw-key-5e4d3c2b1a"


async def test_a_base_urls_query_shows_in_no_warning_or_error(server, caplog):
    """A gateway's key in the base URL's query (``?api-key=``) is sent, never logged or
    told: warnings and the ModelError name the endpoint without it."""
    server.replies += [(503, "busy"), (400, "bad request")]
    model = OpenAIChatModel(
        base_url=f"{server.base_url}?api-key={GATEWAY_KEY}#frag",
        api_key=API_KEY,
        model="gpt-test",
        max_retries=1,
        retry_delay=0,
    )
    with pytest.raises(ModelError) as raised:
        await model.generate(ModelRequest(system_prompt=None, messages=(), tools=()))
    assert server.queries == [f"api-key={GATEWAY_KEY}"] * 2
    endpoint = server.base_url + "/chat/completions"
    assert str(raised.value) == f"{endpoint} answered HTTP 400: bad request"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"{endpoint} answered HTTP {s} for model gpt-test" for s in (503, 400)]
    assert GATEWAY_KEY not in caplog.text and "api-key" not in caplog.text


async def test_an_unreachable_base_url_is_told_without_its_query(caplog):
    app = web.Application()
    test_server = TestServer(app, port=0)
    await test_server.start_server()
    base_url = str(test_server.make_url("/v1"))
    await test_server.close()
    endpoint = base_url + "/chat/completions"
    model = OpenAIChatModel(
        base_url=f"{base_url}?api-key={GATEWAY_KEY}",
        api_key=API_KEY,
        model="gpt-test",
        max_retries=1,
        retry_delay=0,
    )
    with pytest.raises(ModelError) as raised:
        await model.generate(ModelRequest(system_prompt=None, messages=(), tools=()))
    told = str(raised.value)
    assert told.startswith(f"could not reach {endpoint}: "), told
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning == f"{endpoint} unreachable (attempt 1); retrying"
    assert GATEWAY_KEY not in told + caplog.text and "api-key" not in told + caplog.text


def test_repr_does_not_show_a_base_urls_query():
    model = OpenAIChatModel(
        base_url=f"https://gw.example/v1?api-key={GATEWAY_KEY}", api_key=API_KEY, model="gpt-test"
    )
    assert repr(model) == (
        "OpenAIChatModel(url='https://gw.example/v1/chat/completions', model='gpt-test')"
    )


def test_a_base_url_with_credentials_is_refused_when_the_model_is_made():
    """The endpoint is authorised by ``api_key``; a URL's user and password cannot be sent
    with it (every call would fail), so the mistake is named at once, without the password."""
    with pytest.raises(ValueError, match="holds a user or password") as raised:
        OpenAIChatModel(
            base_url="https://gw:pw-9d8c7b6a@gw.example/v1", api_key=API_KEY, model="gpt-test"
        )
    assert "pw-9d8c7b6a" not in str(raised.value)
    assert "https://gw.example/v1" in str(raised.value)
