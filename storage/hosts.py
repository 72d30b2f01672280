"""The hosts and credentials of the multi-host URLs (Sentinel's and Redis Cluster's)."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

_ENCODE = "percent-encode / ? # & @ in a user or password (as %2F %3F %23 %26 %40)"


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
    if item.startswith("["):  # [IPv6 address] or [IPv6 address]:port
        host, bracket, rest = item[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{what} {item!r}: write an IPv6 address as [::1] or [::1]:6379")
        port = rest.removeprefix(":")
    else:
        host, _, port = item.partition(":")
        if ":" in port:  # where would the address end? The brackets say.
            raise ValueError(f"{what} {item!r}: write an IPv6 address as [::1] or [::1]:6379")
    if not host:
        raise ValueError(f"name at least one {what}")
    if port and not port.isdigit():
        raise ValueError(f"{what} port {port!r} is not a number")
    if port and not 0 < int(port) < 65536:
        raise ValueError(f"{what} port {port} is not one: use 1-65535")
    return host, int(port) if port else default_port


def credential_free(error: ValueError, url: str) -> ValueError:
    """``error`` about ``url``, or one saying only what to check when its message quotes a
    piece of what may be the URL's credentials: a password holding ``/ ? # &`` unencoded is
    cut apart by the parser, and its pieces are then named as a host, port or option."""
    scheme_end = url.find("://") + 3
    at = url.rfind("@")
    secret = [url[scheme_end:at]] if at >= scheme_end else []
    secret += re.findall(r"password=(.*)", url)  # up to the end: an & may cut a value
    pieces = {p for text in secret for p in re.split(r"[:/?#&@=,]", text) if p}
    message = str(error)
    if any(p in message if len(p) > 2 else repr(p) in message for p in pieces):
        return ValueError(f"not a well-formed URL: {_ENCODE}")
    return error
