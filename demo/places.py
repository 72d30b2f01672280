"""Where the demo keeps its state, and the port it served last (the standard library only,
so ``--help`` needs nothing installed)."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

PORT_FILE = "port"
API_PORT_FILE = "api-port"
GATE_TOKEN_FILE = "gate-token"


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/signoff/demo`` (``~/.local/share/signoff/demo`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "signoff" / "demo"


def last_port(data_dir: Path, host: str = "127.0.0.1", *, name: str = PORT_FILE) -> int:
    """The port the demo served last from ``data_dir`` when it is free again, else 0 (any):
    a restarted demo keeps its addresses, so an open tab reconnects by itself and a gate
    still waiting reaches the API it asked."""
    with contextlib.suppress(OSError, ValueError):
        port = int((data_dir / name).read_text().strip())
        if 0 < port < 65536:
            with socket.socket() as probe:
                # As the server binds: a closed predecessor's TIME_WAIT does not count.
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, port))
            return port
    return 0


def remember_port(data_dir: Path, port: int, *, name: str = PORT_FILE) -> None:
    with contextlib.suppress(OSError):
        (data_dir / name).write_text(f"{port}\n")
