"""Checking Signoff's webhooks on the receiving side.

    from signoff.webhooks import verify

    if not verify(body, request.headers, secret):   # secret: from `signoff token create`
        return 401
    delivery = request.headers["X-Signoff-Delivery"]  # drop it if seen before

A delivery is signed like Slack signs its requests: ``X-Signoff-Signature: v1=`` the hex
HMAC-SHA256 of ``v1:{X-Signoff-Timestamp}:{body}``. A stale timestamp (more than five
minutes off) fails, so a captured delivery cannot be replayed later; nor sooner under
another ``X-Signoff-Delivery`` (not signed itself), which must be the signed body's
``delivery_id``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from bot.api.signatures import DELIVERY, SIGNATURE, TIMESTAMP, TOLERANCE
from bot.api.signatures import verify as _verify

__all__ = ["DELIVERY", "SIGNATURE", "TIMESTAMP", "verify"]


def verify(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: float | None = None,
    tolerance: int = TOLERANCE,
) -> bool:
    """True when ``body`` and ``headers`` are a delivery signed with ``secret``, recently.
    ``body`` as received, or as the text a framework decoded it to (a delivery is ASCII).
    ``secret`` as read from a file or a mounted secret, its newline too; ValueError when
    there is none (a setting left unset), which would pass a forgery signed with none."""
    key = secret.strip()
    if not key:
        raise ValueError(
            "no webhook secret to check the delivery with: give the one 'signoff token "
            "create' printed for this client"
        )
    raw = body.encode() if isinstance(body, str) else body
    return _verify(raw, headers, key, now=time.time() if now is None else now, tolerance=tolerance)
