"""The Prometheus exposition the bot serves at /metrics."""

from __future__ import annotations

from bot.services.metrics import Metrics


def test_label_values_are_escaped_as_the_exposition_format_requires() -> None:
    metrics = Metrics()
    metrics.refusals['say "hi"\\now\nthen'] += 2
    text = metrics.render(pending=0, queue_lag=0, click_backlog=0)
    assert 'signoff_refused_clicks_total{reason="say \\"hi\\"\\\\now\\nthen"} 2' in text
    assert all(line.count('"') % 2 == 0 for line in text.splitlines() if "reason=" in line)
