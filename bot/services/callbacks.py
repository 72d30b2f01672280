"""Which callback URLs webhooks may go to: https anywhere on the internet, or an
allow-listed host (``SIGNOFF_WEBHOOK_ALLOW``), never a link-local or cloud metadata
address, and an address inside a network (loopback, private, shared) only on an
allow-listed host; checked when a request names the URL and again on every address a
delivery connects to."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from yarl import URL

from storage.hosts import credential_free

_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})
_SERVER_SETTING = "the Signoff server's SIGNOFF_WEBHOOK_ALLOW (its setting, not the asking job's)"
"""Where a request's refusal says to allow an address: a job setting it in its own shell
changes nothing."""
_SHARED = ipaddress.ip_network("100.64.0.0/10")
"""Carrier-grade NAT's shared space (Alibaba Cloud's metadata service is 100.100.100.200)."""
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``address`` as an IP, or None for a name; an IPv6 address carrying an IPv4 one
    (mapped, 6to4, NAT64) as the IPv4 address it reaches."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        carried = ip.ipv4_mapped or ip.sixtofour
        if carried is None and ip in _NAT64:
            carried = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        return carried or ip
    return ip


def _old_spelling(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` spells in a way resolvers still take but the checks here do
    not read (``127.1``, ``0x7f.0.0.1``, ``2130706433``); None for a name or a dotted quad."""
    try:
        ip = ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None
    return None if str(ip) == host else ip


def forbidden_address(address: str) -> bool:
    """True for addresses no webhook may reach: link-local (cloud metadata services live
    there, 169.254.169.254 and fe80::), unspecified or multicast; and AWS's fd00:ec2::254."""
    ip = _ip(address)
    if ip is None:
        return False
    return (
        ip.is_link_local
        or ip.is_unspecified
        or ip.is_multicast
        or ip == ipaddress.ip_address("fd00:ec2::254")
    )


def internal_address(address: str) -> bool:
    """True for addresses inside a network rather than on the internet: loopback, private,
    shared or reserved; a webhook reaches them only on an allow-listed host."""
    ip = _ip(address)
    if ip is None:
        return False
    shared = isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED
    site_local = isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local
    return ip.is_loopback or ip.is_private or ip.is_reserved or shared or site_local


@dataclass(frozen=True, kw_only=True)
class CallbackPolicy:
    """``allow``: hosts (``host`` or ``host:port``) reachable over plain http, and at
    internal addresses, as well."""

    allow: frozenset[str] = frozenset()
    setting: str = _SERVER_SETTING
    """Where a refusal says to add a host to ``allow``: the setting the checking process read."""

    def allowed(self, host: str, port: int | None) -> bool:
        """Whether ``host`` (on ``port``) is allow-listed."""
        return host in self.allow or (port is not None and f"{host}:{port}" in self.allow)

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not receive webhooks, or None when it may."""
        if _CONTROL.search(url):  # a NUL cannot be resolved; a newline would be dropped unseen
            return "not a URL: it has a control character (a newline, say) in it"
        try:
            parts = urlsplit(url)
            port = parts.port
            # The host as the client will connect to it: IDNA turns full-width digits and
            # ideographic full stops into the IP address they spell.
            host = (URL(url).raw_host or "").lower().rstrip(".")
        except (ValueError, UnicodeError) as exc:  # a password cut apart may be quoted
            return str(credential_free(ValueError(f"not a URL: {exc}"), url))
        if parts.scheme not in ("http", "https") or not host:
            return "use an https:// URL"
        if parts.username or parts.password:
            return "put no credentials in the URL; verify the signature instead"
        if (spelled := _old_spelling(host)) is not None:
            return f"write the address {host} as {spelled}"
        if host in _METADATA_HOSTS or forbidden_address(host):
            return f"{host} is a link-local or metadata address"
        allowed = self.allowed(host, port)
        entry = host if port is None else f"{host}:{port}"  # what the allow-list must hold
        if (internal_address(host) or host == "localhost") and not allowed:
            return f"{host} is an internal address: allow {entry} in {self.setting}"
        if parts.scheme != "https" and not allowed:
            return f"use https, or allow {entry} in {self.setting}"
        return None

    def may_connect(self, host: str, port: int, address: str) -> bool:
        """Whether a delivery to ``host`` may connect to ``address``, one it resolved to:
        a name re-pointed inside the network (or at metadata) later is refused then."""
        if forbidden_address(address):
            return False
        return not internal_address(address) or self.allowed(host.rstrip("."), port)
