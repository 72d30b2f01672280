"""The hosts and credentials of the multi-host URLs (Sentinel's and Redis Cluster's)."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Hosts:
    """``[[user]:password@]host[:port][,host[:port]...]``, parsed."""

    hosts: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None


def parse_hosts(netloc: str, *, default_port: int, what: str, example: str) -> Hosts:
    """The hosts and credentials of a URL's ``netloc``; ValueError naming the malformed
    ``what`` and showing ``example``."""
    userinfo, _, hostlist = netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    try:
        hosts = tuple(
            host_port(item, default_port=default_port, what=what) for item in hostlist.split(",")
        )
    except ValueError as exc:
        raise ValueError(f"{exc}: {example}") from exc
    return Hosts(
        hosts=hosts,
        username=urllib.parse.unquote(username) or None,
        password=urllib.parse.unquote(password) or None,
    )


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
