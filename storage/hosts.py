"""``host[:port]`` items of the multi-host URLs (Sentinel's and Redis Cluster's)."""

from __future__ import annotations


def host_port(item: str, *, default_port: int, what: str) -> tuple[str, int]:
    """``(host, port)`` of ``item``, ``default_port`` when it names none; ValueError saying
    which ``what`` (a sentinel, a cluster node) is malformed."""
    host, colon, port = item.rpartition(":")
    if not colon or host.endswith(":"):  # no port, or a bare IPv6 address
        host, port = item, ""
    host = host.removeprefix("[").removesuffix("]")
    if not host:
        raise ValueError(f"name at least one {what}")
    if port and not port.isdigit():
        raise ValueError(f"{what} port {port!r} is not a number")
    return host, int(port) if port else default_port
