"""The Python client against a server that is not there, or does not answer: it says so
at once, then retries."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

import signoff
from signoff.client import SignoffError, SignoffUnreachable


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_server_is_reported_at_the_first_failure_not_after_retrying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    request = signoff.NewRequest(
        title="Rotate keys", channel="C0OPS", approvers=["U0ALICE"], idempotency_key="k-1"
    )
    with caplog.at_level(logging.WARNING, logger="signoff.client"):
        async with signoff.Client(url, "sgn_" + "x" * 30) as client:
            with pytest.raises(SignoffUnreachable, match=f"cannot reach Signoff at {url}"):
                await client.create(request, retry_for=1.0)
    [said] = [r.getMessage() for r in caplog.records]
    assert said == f"cannot reach Signoff at {url} (Connection refused); trying again for 1 s"


def test_an_address_with_a_user_or_password_is_refused_before_anything_is_sent() -> None:
    """The token alone authenticates; a password in the address would only be shown in
    what the client says of it (and aiohttp refuses it beside the token's header)."""
    with pytest.raises(ValueError, match="has a user or password in it"):
        signoff.Client("https://ops:hunter2@signoff.example.com", "sgn_" + "x" * 30)


async def test_a_tls_failure_is_told_as_such() -> None:
    """An https URL to a server that does not speak TLS: the reason names TLS, not the
    errno-like code TLS errors carry."""

    async def plain_http(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(plain_http, "127.0.0.1", 0)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    request = signoff.NewRequest(title="Rotate keys", channel="C0OPS", approvers=["U0ALICE"])
    try:
        async with signoff.Client(url, "sgn_" + "x" * 30) as client:
            with pytest.raises(SignoffUnreachable) as failed:
                await client.create(request, retry_for=0.1)
    finally:
        server.close()
    assert "SSL" in str(failed.value) and "Operation not permitted" not in str(failed.value)


async def test_a_server_that_never_answers_counts_as_unreachable() -> None:
    """A server that takes the connection and then hangs: the long-poll gives up after
    its wait and the read timeout, instead of holding the job forever."""
    held: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with signoff.Client(url, "sgn_" + "x" * 30, read_timeout=0.2) as client:
            with pytest.raises(SignoffUnreachable, match="did not answer in time"):
                await asyncio.wait_for(client.wait("req_" + "0" * 32, within=0.5), 10)
    finally:
        for writer in held:
            writer.close()
        server.close()
    assert held  # it connected: the call was given up for want of an answer


async def test_a_server_answering_json_that_is_not_the_apis_is_named_so() -> None:
    """SIGNOFF_URL set to the address of another service (the local Slack sandbox's page
    answers every path with Slack's own error shape)."""

    async def slack_shaped(_: web.Request) -> web.Response:
        return web.json_response({"ok": False, "error": "unknown_method"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", slack_shaped)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    url = f"http://127.0.0.1:{server.port}"
    request = signoff.NewRequest(title="Rotate keys", channel="C0OPS", approvers=["U0ALICE"])
    try:
        async with signoff.Client(url, "sgn_" + "x" * 30) as client:
            with pytest.raises(SignoffError) as failed:
                await client.create(request, retry_for=0.1)
    finally:
        await server.close()
    assert str(failed.value) == (
        f"200 from {url}: not the Signoff API (asked {url}/api/requests; give the address "
        "Signoff serves /api/requests under)"
    )


async def test_a_url_with_the_apis_path_in_it_is_told_which_address_to_give() -> None:
    """SIGNOFF_URL=https://signoff.example.com/api: the API's own path, given twice, which
    the server answers with its plain 404 page."""
    server = TestServer(web.Application(), host="127.0.0.1", port=0)  # 404 for every path
    await server.start_server()
    url = f"http://127.0.0.1:{server.port}/api"
    request = signoff.NewRequest(title="Rotate keys", channel="C0OPS", approvers=["U0ALICE"])
    try:
        async with signoff.Client(url, "sgn_" + "x" * 30) as client:
            with pytest.raises(SignoffError) as failed:
                await client.create(request, retry_for=0.1)
    finally:
        await server.close()
    assert str(failed.value) == (
        f"404 from {url}: not the Signoff API (asked {url}/api/requests; give the address "
        "Signoff serves /api/requests under)"
    )


async def test_a_proxys_error_page_not_in_its_charset_is_retried_then_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A proxy answers 502 while Signoff restarts, with a page in Latin-1 it calls UTF-8:
    the client retries it as any 502, then says what it answered, and never raises a
    decoding error (a traceback, and an exit status the gate does not document)."""

    async def bad_gateway(_: web.Request) -> web.Response:
        page = "<h1>Passerelle indisponible: réessayez</h1>".encode("latin-1")
        return web.Response(status=502, body=page, content_type="text/html", charset="utf-8")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", bad_gateway)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    url = f"http://127.0.0.1:{server.port}"
    request = signoff.NewRequest(
        title="Rotate keys", channel="C0OPS", approvers=["U0ALICE"], idempotency_key="k-1"
    )
    try:
        with caplog.at_level(logging.WARNING, logger="signoff.client"):
            async with signoff.Client(url, "sgn_" + "x" * 30) as client:
                with pytest.raises(SignoffUnreachable) as failed:
                    await client.create(request, retry_for=1.0)
    finally:
        await server.close()
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"{url} answered 502: <h1>Passerelle indisponible"), said
    assert said.endswith("; trying again for 1 s"), said
    assert f"cannot reach Signoff at {url}: 502: <h1>Passerelle indisponible" in str(failed.value)
