"""Which callback URLs webhooks may go to: https anywhere public, or an allow-listed
host (``SIGNOFF_WEBHOOK_ALLOW``), and never a link-local or cloud metadata address,
checked when a request names the URL and again on every address it resolves to."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})


def forbidden_address(address: str) -> bool:
    """True for addresses no webhook may reach: link-local (cloud metadata services live
    there, 169.254.169.254 and fe80::), unspecified or multicast; and AWS's fd00:ec2::254."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_link_local
        or ip.is_unspecified
        or ip.is_multicast
        or ip == ipaddress.ip_address("fd00:ec2::254")
    )


@dataclass(frozen=True, kw_only=True)
class CallbackPolicy:
    """``allow``: hosts (``host`` or ``host:port``) reachable over plain http as well."""

    allow: frozenset[str] = frozenset()

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not receive webhooks, or None when it may."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return f"not a URL: {exc}"
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            return "use an https:// URL"
        if parts.username or parts.password:
            return "put no credentials in the URL; verify the signature instead"
        if host in _METADATA_HOSTS or forbidden_address(host):
            return f"{host} is a link-local or metadata address"
        allowed = host in self.allow or (port is not None and f"{host}:{port}" in self.allow)
        if parts.scheme != "https" and not allowed:
            return f"use https, or allow {host} in SIGNOFF_WEBHOOK_ALLOW"
        return None
