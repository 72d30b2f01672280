"""``redis+sentinel://``: storage reaches the primary through a real Sentinel and, when the
primary dies and Sentinel promotes the replica, carries on with every decision intact."""

from __future__ import annotations

import logging
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from storage_helpers import DIGEST, NOW, make_record, wait_for
from strands.types.exceptions import StorageError as StrandsStorageError

from agent_runtime.interrupts import Decision
from bot.errors import ConfigError
from bot.process.settings import Settings
from signoff.strands_storage import RedisStorage
from storage import connect
from storage.client import RedisClient
from storage.embedded import find_server_binary
from storage.errors import StorageAuthError, StorageUnavailableError
from storage.sentinel import SentinelTarget, parse_sentinel_url

SERVICE = "signoff-primary"
PRIMARY_PASSWORD = "primary p@ss"
SENTINEL_PASSWORD = "sentinel p@ss/word:1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Node:
    """One valkey-server process on a loopback TCP port, killed by ``kill``."""

    def __init__(self, directory: Path, *args: str, password: str | None = None) -> None:
        directory.mkdir()
        self.port = _free_port()
        self.client = aioredis.Redis(port=self.port, password=password, decode_responses=True)
        self.process = subprocess.Popen(
            [find_server_binary(), *args, "--port", str(self.port), "--bind", "127.0.0.1"],
            cwd=directory,
            stdout=(directory / "log").open("w"),
            stderr=subprocess.STDOUT,
        )

    async def answers(self) -> bool:
        try:
            return bool(await self.client.ping())
        except (OSError, RedisConnectionError):
            return False

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[tuple[Node, Node, Node]]:
    """A primary, its replica, and one Sentinel monitoring them (quorum 1)."""
    primary = Node(tmp_path / "primary", "--save", "", "--repl-diskless-sync-delay", "0")
    replica = Node(
        tmp_path / "replica", "--save", "", "--replicaof", "127.0.0.1", str(primary.port)
    )
    config = tmp_path / "sentinel.conf"
    config.write_text(
        f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} 1\n"
        f"sentinel known-replica {SERVICE} 127.0.0.1 {replica.port}\n"
        f"sentinel down-after-milliseconds {SERVICE} 1000\n"
        f"sentinel failover-timeout {SERVICE} 10000\n"
    )
    sentinel = Node(tmp_path / "sentinel", str(config), "--sentinel")
    yield primary, replica, sentinel
    for node in (sentinel, replica, primary):
        if node.process.poll() is None:
            node.kill()


async def test_decisions_survive_the_primarys_death_and_a_sentinel_failover(
    nodes: tuple[Node, Node, Node], key_prefix: str
) -> None:
    primary, replica, sentinel = nodes
    for node in nodes:
        await wait_for(node.answers, within=10, what=f"valkey on port {node.port}")

    async def replica_known() -> bool:
        found = await sentinel.client.execute_command("SENTINEL", "REPLICAS", SERVICE)
        info = await replica.client.info("replication")
        return bool(found) and info.get("master_link_status") == "up"

    await wait_for(replica_known, within=20, what="sentinel to see the synced replica")

    storage = await connect(
        f"redis+sentinel://127.0.0.1:{sentinel.port}/{SERVICE}", prefix=key_prefix
    )
    try:
        first, second = make_record(call_id="c1"), make_record(run_id="run_2", call_id="c2")
        await storage.interrupts.create_interrupts([first])
        await storage.interrupts.create_interrupts([second])
        decided = await storage.interrupts.decide(
            first.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        assert decided.status == "recorded"
        assert "signoff-primary" in storage.client.where

        async def replicated() -> bool:  # every write so far, whichever connection made it
            written = (await primary.client.info("replication"))["master_repl_offset"]
            copied = (await replica.client.info("replication"))["slave_repl_offset"]
            return int(copied) >= int(written)

        await wait_for(replicated, within=10, what="the replica to copy every write")
        primary.kill()

        async def promoted() -> bool:  # the failover done, as clients ask Sentinel for it
            state = await sentinel.client.execute_command("SENTINEL", "MASTER", SERVICE)
            return int(state["port"]) == replica.port and state["flags"] == "master"

        await wait_for(promoted, within=20, what="Sentinel to promote the replica")

        after = await storage.interrupts.decide(
            second.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        assert after.status == "recorded"
        stored = await storage.queries.get(first.id)
        assert stored is not None and stored.state == "approved" and stored.decided_by == "UBOB"
    finally:
        await storage.close()


def test_sentinel_urls_name_the_sentinels_service_db_and_credentials() -> None:
    assert parse_sentinel_url(
        "redis+sentinel://app:s%40cret@10.0.0.1,10.0.0.2:26380,[::1]:26381/ops/2"
    ) == SentinelTarget(
        sentinels=(("10.0.0.1", 26379), ("10.0.0.2", 26380), ("::1", 26381)),
        service="ops",
        db=2,
        username="app",
        password="s@cret",
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://10.0.0.1:26379", "name the service"),
        ("redis+sentinel://10.0.0.1/ops/zero", "db must be a number"),
        ("redis+sentinel://10.0.0.1:port/ops", "not a number"),
        ("redis+sentinel:///ops", "at least one sentinel"),
    ],
)
def test_a_malformed_sentinel_url_stops_startup_naming_redis_url(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"REDIS_URL": url})
    assert str(info.value).startswith("REDIS_URL: ") and says in str(info.value)


async def test_sentinels_that_name_no_primary_are_told_in_one_short_line() -> None:
    closed = _free_port()
    client = RedisClient(f"redis+sentinel://127.0.0.1:{closed}/mymaster", retries=0, timeout=1.0)
    try:
        with pytest.raises(StorageUnavailableError) as raised:
            await client.ping()
    finally:
        await client.close()
    said = str(raised.value)
    assert said.startswith("ping: cannot find the primary of 'mymaster' (sentinels")
    assert "<redis." not in said and len(said) < 400


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    """A primary and a Sentinel monitoring it, each with a password of its own (the
    sentinel's ``requirepass``, as Bitnami's chart and managed setups configure)."""
    primary = Node(
        tmp_path / "primary", "--save", "", "--requirepass", PRIMARY_PASSWORD,
        password=PRIMARY_PASSWORD,
    )  # fmt: skip
    config = tmp_path / "sentinel.conf"
    config.write_text(
        f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} 1\n"
        f'sentinel auth-pass {SERVICE} "{PRIMARY_PASSWORD}"\n'
        f'requirepass "{SENTINEL_PASSWORD}"\n'
    )
    sentinel = Node(tmp_path / "sentinel", str(config), "--sentinel", password=SENTINEL_PASSWORD)
    yield primary, sentinel
    for node in (sentinel, primary):
        if node.process.poll() is None:
            node.kill()


async def _watching(primary: Node, sentinel: Node) -> None:
    """Until the sentinel answers with the primary it monitors up."""
    for node in (primary, sentinel):
        await wait_for(node.answers, within=10, what=f"valkey on port {node.port}")

    async def primary_up() -> bool:
        state = await sentinel.client.execute_command("SENTINEL", "MASTER", SERVICE)
        return bool(state["flags"] == "master")

    await wait_for(primary_up, within=10, what="the sentinel to see the primary")


def _guarded_url(sentinel: Node, query: str) -> str:
    primary_credentials = urllib.parse.quote(PRIMARY_PASSWORD, safe="")
    return f"redis+sentinel://:{primary_credentials}@127.0.0.1:{sentinel.port}/{SERVICE}{query}"


async def test_sentinels_with_a_password_of_their_own_take_it_as_sentinel_password(
    guarded: tuple[Node, Node], key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    primary, sentinel = guarded
    await _watching(primary, sentinel)
    caplog.set_level(logging.DEBUG)
    query = "?sentinel_password=" + urllib.parse.quote(SENTINEL_PASSWORD, safe="")
    storage = await connect(_guarded_url(sentinel, query), prefix=key_prefix)
    try:
        record = make_record(call_id="c1")
        await storage.interrupts.create_interrupts([record])
        decided = await storage.interrupts.decide(
            record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        assert decided.status == "recorded"
        keys = await primary.client.keys(f"{key_prefix}:*")
        assert keys, "the decision is stored on the primary the sentinel named"
    finally:
        await storage.close()
    assert SENTINEL_PASSWORD not in caplog.text and PRIMARY_PASSWORD not in caplog.text


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("", "take it as ?sentinel_password="),
        ("?sentinel_password=wrong", "check sentinel_password (and sentinel_username)"),
        (
            "?sentinel_username=app&sentinel_password=" + urllib.parse.quote(SENTINEL_PASSWORD),
            "check sentinel_password (and sentinel_username)",
        ),
    ],
    ids=["missing", "wrong", "unknown-user"],
)
async def test_sentinels_refusing_our_credentials_are_told_in_one_line(
    guarded: tuple[Node, Node], query: str, says: str
) -> None:
    primary, sentinel = guarded
    await _watching(primary, sentinel)
    client = RedisClient(_guarded_url(sentinel, query))  # retrying as the bot does
    started = time.monotonic()
    try:
        with pytest.raises(StorageAuthError) as raised:
            await client.ping()
    finally:
        await client.close()
    assert time.monotonic() - started < 5, "told after our retries, not each sentinel's too"
    said = str(raised.value)
    assert said.startswith(f"ping: cannot find the primary of {SERVICE!r} (sentinels ")
    assert "1 of 1 sentinels refused our credentials" in said and says in said
    assert "\n" not in said and len(said) < 400
    assert SENTINEL_PASSWORD not in said and PRIMARY_PASSWORD not in said and "wrong" not in said


def test_a_sentinel_url_takes_the_sentinels_credentials_and_never_shows_them() -> None:
    target = parse_sentinel_url(
        "redis+sentinel://:pw@10.0.0.1/ops?sentinel_username=watch&sentinel_password=s%2Fcret"
    )
    assert (target.sentinel_username, target.sentinel_password) == ("watch", "s/cret")
    assert (target.username, target.password) == (None, "pw")
    assert "s/cret" not in repr(target) and "pw" not in repr(target)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://h/ops?sentinel_pasword=hunter2", "unknown options ['sentinel_pasword']"),
        ("redis+sentinel://h/ops?sentinel_username=watch", "sentinel_username needs"),
    ],
)
def test_a_sentinel_url_with_a_wrong_option_stops_startup_without_its_value(
    url: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"REDIS_URL": url})
    assert says in str(info.value) and "hunter2" not in str(info.value)


async def test_strands_sessions_live_behind_the_same_sentinels(
    guarded: tuple[Node, Node], key_prefix: str
) -> None:
    """``RedisStorage`` takes the ``redis+sentinel://`` URL Signoff runs on, the sentinels'
    own password too; sentinels that refuse it are a short Strands ``StorageError``."""
    primary, sentinel = guarded
    await _watching(primary, sentinel)
    query = "?sentinel_password=" + urllib.parse.quote(SENTINEL_PASSWORD, safe="")
    store = RedisStorage(_guarded_url(sentinel, query), prefix=key_prefix)
    try:
        await store.write("session/s1/snapshot_latest.json", b"{}")
        assert await store.read("session/s1/snapshot_latest.json") == b"{}"
        assert await primary.client.exists(f"{key_prefix}:blob:session/s1/snapshot_latest.json")
    finally:
        store.close()
    refused = RedisStorage(_guarded_url(sentinel, "?sentinel_password=wrong"), retries=0)
    try:
        with pytest.raises(StrandsStorageError) as raised:
            await refused.read("session/s1/snapshot_latest.json")
    finally:
        refused.close()
    said = str(raised.value)
    assert "no sentinel named a reachable primary" in said and len(said) < 300
    assert "wrong" not in said and SENTINEL_PASSWORD not in said


@pytest.mark.parametrize(
    "url",
    [
        "redis://:Hunter2xyz/tail@h:6379/0",
        "redis://ops:Hunter2xyz?tail@h:6379/0",
        "rediss://:Hunter2xyz#tail@h:6379",
        "redis+sentinel://ops:Hunter2xyz/tail@h:26379/mymaster",
        "rediss+cluster://ops:Hunter2xyz#tail@h1:6379,h2:6379",
        "redis+sentinel://h/mymaster?sentinel_password=Hunter2&xyztail",
        "redis+sentinel://h/mymaster?sentinel_password=Hun&te",
    ],
)
async def test_a_url_whose_password_holds_an_unencoded_delimiter_is_refused_without_it(
    url: str,
) -> None:
    """A password with / ? # or & cut apart by the URL's parser: no piece of it is shown
    by startup, by ``connect`` nor by a Strands session's storage, only what to encode."""
    shown = []
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"REDIS_URL": url})
    shown.append(str(info.value))
    with pytest.raises(ValueError) as error:
        await connect(url, prefix="leak")
    shown.append(str(error.value))
    with pytest.raises(ValueError) as error:
        RedisStorage(url)
    shown.append(str(error.value))
    for text in shown:
        assert "percent-encode" in text
        for piece in ("Hunter2", "xyz", "tail", "'te'", "Hun"):
            assert piece not in text
