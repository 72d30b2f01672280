"""A REDIS_URL naming the wrong kind of server, or none, is one clear error saying what
to change, not a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from storage import EmbeddedRedis, connect
from storage.client import RedisClient
from storage.embedded import find_server_binary
from storage.embedded_cluster import EmbeddedCluster
from storage.errors import StorageError, StorageResponseError, StorageUnavailableError

HANDSHAKE_TIMEOUT = 0.5
"""A TLS handshake a plain server never answers fails at the timeout: this, not 5 s."""


async def test_a_cluster_url_with_no_node_listening_names_what_to_check() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StorageUnavailableError, match=r"as a Redis Cluster.*cluster mode"):
        await connect(f"redis+cluster://127.0.0.1:{port}/")


async def test_a_single_server_url_at_a_cluster_node_says_to_use_a_cluster_url(
    redis_cluster: EmbeddedCluster, key_prefix: str
) -> None:
    password = urlsplit(redis_cluster.url).password
    node = redis_cluster.servers[0].port
    url = f"redis://:{password}@127.0.0.1:{node}/0"
    with pytest.raises(StorageResponseError, match=r"use a redis\+cluster:// URL"):
        storage = await connect(url, prefix=key_prefix)  # its first write may be refused
        try:
            for n in range(20):  # else the first read of a key whose slot is elsewhere
                await storage.sessions.load(f"thread_{n}")
        finally:
            await storage.close()


async def test_a_database_the_server_does_not_have_is_named_as_such(
    redis_server: EmbeddedRedis,
) -> None:
    """The server answered: it is running and reachable, its databases end before /99."""
    url = redis_server.url.replace("db=0", "db=99")
    assert url != redis_server.url
    with pytest.raises(StorageUnavailableError) as refused:
        await connect(url)
    said = str(refused.value)
    assert "has no such database" in said and "that the server is running" not in said


async def test_a_server_that_evicts_keys_when_full_is_warned_of(
    redis_server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """Pending requests carry expiry times: a volatile-* policy could drop them."""
    probe = await connect(redis_server.url)
    try:
        await probe.client.raw.config_set("maxmemory-policy", "volatile-lru")
        with caplog.at_level(logging.WARNING, logger="storage.connection"):
            await (await connect(redis_server.url)).close()
        assert "maxmemory-policy volatile-lru" in caplog.text
        await probe.client.raw.config_set("maxmemory-policy", "noeviction")
        caplog.clear()
        await (await connect(redis_server.url)).close()
        assert "maxmemory-policy" not in caplog.text
    finally:
        await probe.client.raw.config_set("maxmemory-policy", "noeviction")
        await probe.close()


async def _old_redis(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A server answering as Redis 6.0.16 does: no XAUTOCLAIM, which came in 6.2."""
    info = b"# Server\r\nredis_version:6.0.16\r\nredis_mode:standalone\r\n"
    while line := await reader.readline():
        args = []
        for _ in range(int(line[1:])):  # "*N", then N "$len" / value pairs
            size = int((await reader.readline())[1:])
            args.append((await reader.readexactly(size + 2))[:-2].upper())
        if args[0] == b"PING":
            writer.write(b"+PONG\r\n")
        elif args[0] == b"INFO":
            writer.write(b"$%d\r\n%s\r\n" % (len(info), info))
        elif args[0] == b"XAUTOCLAIM":
            writer.write(b"-ERR unknown command `XAUTOCLAIM`\r\n")
        else:
            writer.write(b"+OK\r\n")
        await writer.drain()
    writer.close()


async def _redis_5(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A server answering as Redis 5.0.14 does: no HELLO, which redis-py sends first."""
    while line := await reader.readline():
        args = []
        for _ in range(int(line[1:])):
            size = int((await reader.readline())[1:])
            args.append((await reader.readexactly(size + 2))[:-2])
        if args[0].upper() == b"HELLO":
            writer.write(b"-ERR unknown command `HELLO`, with args beginning with: `3`, \r\n")
        else:
            writer.write(b"+OK\r\n")
        await writer.drain()
    writer.close()


async def test_a_server_older_than_6_without_hello_is_refused_as_too_old() -> None:
    server = await asyncio.start_server(_redis_5, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(StorageResponseError) as refused:
            await connect(f"redis://127.0.0.1:{port}/0")
    finally:
        server.close()
    said = str(refused.value)
    assert "older than 6" in said and "6.2 or newer" in said and "\n" not in said, said


async def test_a_server_older_than_6_2_is_refused_in_one_line() -> None:
    """Its streams could never be taken over: every decider and worker would fail."""
    server = await asyncio.start_server(_old_redis, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(StorageResponseError, match=r"version 6\.0\.16: .* 6\.2 or newer"):
            await connect(f"redis://127.0.0.1:{port}/0")
    finally:
        server.close()


@pytest.mark.parametrize("url", ["redis://redis.internal/0", "rediss://:s3cret@redis.internal"])
async def test_an_address_given_without_a_port_is_named_with_the_port_tried(url: str) -> None:
    client = RedisClient(url)
    try:
        assert client.where == "redis.internal:6379"
    finally:
        await client.close()


@pytest.fixture
def tcp_server(tmp_path: Path) -> Iterator[int]:
    """A plain (no TLS) server on a loopback TCP port, as most self-hosted Redis are."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    process = subprocess.Popen(
        [find_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as sock, contextlib.suppress(OSError):
                sock.connect(("127.0.0.1", port))
                break
            assert time.monotonic() < deadline and process.poll() is None, "server did not start"
            time.sleep(0.05)
        yield port
    finally:
        process.kill()
        process.wait(10)


async def test_a_database_a_tcp_server_does_not_have_is_named_as_such(tcp_server: int) -> None:
    with pytest.raises(StorageUnavailableError) as refused:
        await connect(f"redis://127.0.0.1:{tcp_server}/99")
    said = str(refused.value)
    assert "has no such database" in said and "such as /0" in said, said


async def test_a_tls_url_at_a_server_without_tls_says_to_check_tls(tcp_server: int) -> None:
    """The TLS handshake meets a server waiting for a command: a timeout, not a refusal."""
    with pytest.raises(StorageError) as refused:
        await connect(f"rediss://127.0.0.1:{tcp_server}/0", socket_timeout=HANDSHAKE_TIMEOUT)
    said = str(refused.value)
    assert "TLS" in said and "redis://" in said and "overloaded" not in said, said


async def test_a_tls_cluster_url_at_a_server_without_tls_says_to_check_tls(
    tcp_server: int,
) -> None:
    with pytest.raises(StorageError) as refused:
        await connect(f"rediss+cluster://127.0.0.1:{tcp_server}/", socket_timeout=HANDSHAKE_TIMEOUT)
    said = str(refused.value)
    assert "TLS" in said and "redis+cluster://" in said and "credentials" not in said, said
