"""A local Redis Cluster from the embedded server binary: the cluster layout's tests and
benchmarks run on it, and anyone can try ``redis+cluster://`` without a cloud account.

``primaries`` servers on loopback ports, each with its cluster bus, all behind one random
password; slots split evenly, formed as ``valkey-cli --cluster create`` would. Nothing
is persisted: a stopped cluster is gone.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS

from .embedded import find_server_binary
from .errors import EmbeddedServerError

_START_TIMEOUT_S = 20.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(kw_only=True)
class ClusterServer:
    """One node: its client port, its cluster bus port and its process."""

    port: int
    bus_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    node_id: str = ""


class EmbeddedCluster:
    """``url = cluster.start()`` ... ``cluster.stop()``: a running local cluster."""

    def __init__(self, data_dir: Path, *, primaries: int = 3, binary: str | None = None) -> None:
        self._data_dir = data_dir
        self._binary = binary
        self._password = secrets.token_hex(16)
        self.servers = [
            ClusterServer(port=_free_port(), bus_port=_free_port(), directory=data_dir / f"n{i}")
            for i in range(primaries)
        ]

    @property
    def url(self) -> str:
        nodes = ",".join(f"127.0.0.1:{server.port}" for server in self.servers)
        return f"redis+cluster://:{self._password}@{nodes}/"

    def start(self) -> str:
        """Start every node, join them and give each an equal share of the slots."""
        binary = self._binary or find_server_binary()
        try:
            for server in self.servers:
                self._launch(binary, server)
            self._form()
        except BaseException:
            self.stop()
            raise
        return self.url

    def _launch(self, binary: str, server: ClusterServer) -> None:
        server.directory.mkdir(parents=True, exist_ok=True)
        config = server.directory / "node.conf"
        config.write_text(
            "\n".join(
                [
                    f"port {server.port}",
                    "bind 127.0.0.1",
                    "cluster-enabled yes",
                    "cluster-config-file nodes.conf",
                    f"cluster-port {server.bus_port}",
                    "cluster-node-timeout 5000",
                    f"requirepass {self._password}",
                    f"masterauth {self._password}",
                    f'dir "{server.directory.resolve()}"',
                    "appendonly no",
                    'save ""',
                    "logfile server.log",
                    "",
                ]
            )
        )
        server.process = subprocess.Popen(
            [binary, str(config.resolve())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._until(lambda: self._answers(server), f"node on port {server.port} to answer")

    def _form(self) -> None:
        clients = [self._client(server) for server in self.servers]
        for epoch, (server, client) in enumerate(zip(self.servers, clients, strict=True), 1):
            _command(client, "CLUSTER", "SET-CONFIG-EPOCH", epoch)
            server.node_id = str(_command(client, "CLUSTER", "MYID"))
        for server in self.servers[1:]:
            _command(clients[0], "CLUSTER", "MEET", "127.0.0.1", server.port, server.bus_port)
        count = len(self.servers)
        for i, client in enumerate(clients):
            first = i * REDIS_CLUSTER_HASH_SLOTS // count
            last = (i + 1) * REDIS_CLUSTER_HASH_SLOTS // count - 1
            _command(client, "CLUSTER", "ADDSLOTSRANGE", first, last)

        def formed() -> bool:
            for client in clients:
                info = str(_command(client, "CLUSTER", "INFO"))
                if "cluster_state:ok" not in info or f"cluster_known_nodes:{count}" not in info:
                    return False
            return True

        self._until(formed, "the cluster to form")
        for client in clients:
            client.close()

    async def migrate_slot(self, slot: int, *, to: int, batch: int = 10) -> int:
        """Move ``slot`` to node ``to`` as an operator resharding would (keys in batches
        of ``batch`` while clients keep using them); how many keys moved."""
        owner = await self._owner(slot)
        source, target = self.servers[owner], self.servers[to]
        clients = [self._async_client(server) for server in self.servers]
        src, dst = clients[owner], clients[to]
        moved = 0
        try:
            await _acommand(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", source.node_id)
            await _acommand(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", target.node_id)
            while keys := await _acommand(src, "CLUSTER", "GETKEYSINSLOT", slot, batch):
                await _acommand(
                    src, "MIGRATE", "127.0.0.1", target.port, "", 0, 5000,
                    "AUTH", self._password, "KEYS", *keys,
                )  # fmt: skip
                moved += len(keys)
            for client in (dst, src, *clients):
                await _acommand(client, "CLUSTER", "SETSLOT", slot, "NODE", target.node_id)
        finally:
            for client in clients:
                await client.aclose()
        return moved

    async def _owner(self, slot: int) -> int:
        client = self._async_client(self.servers[0])
        try:
            ranges = await _acommand(client, "CLUSTER", "SLOTS")
        finally:
            await client.aclose()
        for first, last, primary, *_ in ranges:
            if first <= slot <= last:
                return next(i for i, s in enumerate(self.servers) if s.port == int(primary[1]))
        raise EmbeddedServerError(f"no node serves slot {slot}")

    def stop(self) -> None:
        for server in self.servers:
            process, server.process = server.process, None
            if process is not None:
                process.kill()
                process.wait()

    def _client(self, server: ClusterServer) -> redis.Redis:
        return redis.Redis(port=server.port, password=self._password, decode_responses=True)

    def _async_client(self, server: ClusterServer) -> aioredis.Redis:
        return aioredis.Redis(port=server.port, password=self._password, decode_responses=True)

    def _answers(self, server: ClusterServer) -> bool:
        if server.process is not None and server.process.poll() is not None:
            log = (server.directory / "server.log").read_text(errors="replace")
            raise EmbeddedServerError(f"cluster node exited while starting: {log[-500:]}")
        try:
            with self._client(server) as client:
                return bool(client.ping())
        except redis.ConnectionError:
            return False

    @staticmethod
    def _until(condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not condition():
            if time.monotonic() > deadline:
                raise EmbeddedServerError(
                    f"timed out after {_START_TIMEOUT_S:.0f}s waiting for {what}"
                )
            time.sleep(0.02)


def _command(client: redis.Redis, *args: object) -> Any:
    """A cluster administration command (redis-py types them only on RedisCluster)."""
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


async def _acommand(client: aioredis.Redis, *args: object) -> Any:
    return await client.execute_command(*args)  # type: ignore[no-untyped-call]
