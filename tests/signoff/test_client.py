"""The Python client against a server that is not there: it says so at once, then retries."""

from __future__ import annotations

import logging
import socket

import pytest

import signoff
from signoff.client import SignoffUnreachable


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_server_is_reported_at_the_first_failure_not_after_retrying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    request = signoff.NewRequest(
        title="Rotate keys", channel="C0OPS", approvers=["U0ALICE"], idempotency_key="k-1"
    )
    with caplog.at_level(logging.WARNING, logger="signoff.client"):
        async with signoff.Client(url, "sgn_" + "x" * 30) as client:
            with pytest.raises(SignoffUnreachable, match=f"cannot reach Signoff at {url}"):
                await client.create(request, retry_for=1.0)
    [said] = [r.getMessage() for r in caplog.records]
    assert said == f"cannot reach Signoff at {url} (Connection refused); trying again for 1 s"
