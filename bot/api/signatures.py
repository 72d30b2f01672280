"""Webhook signatures, made the way Slack signs its requests to apps.

``X-Signoff-Signature: v1=<hex HMAC-SHA256 of "v1:{timestamp}:{body}">`` with the API
client's webhook secret, ``X-Signoff-Timestamp`` in Unix seconds, and
``X-Signoff-Delivery``: the same id on every retry of one event, for dropping duplicates;
it must be the signed body's ``delivery_id``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping

SIGNATURE = "X-Signoff-Signature"
TIMESTAMP = "X-Signoff-Timestamp"
DELIVERY = "X-Signoff-Delivery"
TOLERANCE = 300
"""Seconds a signed timestamp stays acceptable, as Slack's own (replays are refused)."""


def signature(body: bytes, secret: str, timestamp: int) -> str:
    base = b"v1:" + str(timestamp).encode() + b":" + body
    return "v1=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(body: bytes, secret: str, *, timestamp: int, delivery_id: str) -> dict[str, str]:
    """The headers one delivery is sent with."""
    return {
        "Content-Type": "application/json",
        TIMESTAMP: str(timestamp),
        SIGNATURE: signature(body, secret, timestamp),
        DELIVERY: delivery_id,
    }


def verify(
    body: bytes, headers: Mapping[str, str], secret: str, *, now: float, tolerance: int = TOLERANCE
) -> bool:
    """True when ``body`` was signed with ``secret`` within ``tolerance`` seconds of ``now``."""
    found = {k.lower(): v for k, v in headers.items()}
    stamp, given = found.get(TIMESTAMP.lower(), ""), found.get(SIGNATURE.lower(), "")
    # Unix seconds have 10 digits for centuries: a longer stamp is forged (and one too long
    # for int() or a float would raise rather than fail).
    if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 12:
        return False
    if abs(now - int(stamp)) > tolerance:
        return False
    # compare_digest takes ASCII text only: a signature that is not cannot be ours.
    if not (given.isascii() and hmac.compare_digest(signature(body, secret, int(stamp)), given)):
        return False
    # The header is not signed, the body is: a captured delivery sent again under another
    # id would pass a receiver's duplicate check.
    return found.get(DELIVERY.lower()) == _delivery_id(body)


def _delivery_id(body: bytes) -> str | None:
    """The ``delivery_id`` a signed body carries, or None when it carries none."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    found = data.get("delivery_id") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None
