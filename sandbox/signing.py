"""Slack's v0 request signature, computed the way Slack computes it for every delivery."""

from __future__ import annotations

import time

from slack_sdk.signature import SignatureVerifier


def signature_headers(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    """`X-Slack-Request-Timestamp` and `X-Slack-Signature` for `body`, stamped now."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}
