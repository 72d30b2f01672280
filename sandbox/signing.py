"""Slack's v0 request signature, computed the way Slack computes it for every delivery."""

from __future__ import annotations

import hashlib
import hmac
import time


def signature_headers(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    """`X-Slack-Request-Timestamp` and `X-Slack-Signature` for `body`, stamped now."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    base = b"v0:" + stamp.encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}
