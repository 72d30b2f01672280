"""The Prometheus exposition the bot serves at /metrics."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness import Harness

from bot.services.metrics import Metrics


def test_label_values_are_escaped_as_the_exposition_format_requires() -> None:
    metrics = Metrics()
    metrics.refusals['say "hi"\\now\nthen'] += 2
    text = metrics.render(pending=0, queue_lag=0, click_backlog=0)
    assert 'signoff_refused_clicks_total{reason="say \\"hi\\"\\\\now\\nthen"} 2' in text
    assert all(line.count('"') % 2 == 0 for line in text.splitlines() if "reason=" in line)


def test_the_readme_names_every_metric_the_bot_serves() -> None:
    metrics = Metrics()
    metrics.decisions["approved"] += 1
    metrics.refusals["self_approval"] += 1
    metrics.webhooks["delivered"] += 1
    text = metrics.render(pending=0, queue_lag=0, click_backlog=0)
    served = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")}
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert len(served) == 12
    assert [name for name in sorted(served) if f"`{name}" not in readme] == []


def test_the_readmes_metrics_table_is_what_the_bot_serves_with_the_types_it_says() -> None:
    """Both ways: each row names a metric served, of the type it says (a gauge, a
    histogram, else a ``_total`` counter), with the label it names."""
    metrics = Metrics()
    metrics.decisions["approved"] += 1
    metrics.refusals["self_approval"] += 1
    metrics.webhooks["delivered"] += 1
    text = metrics.render(pending=0, queue_lag=0, click_backlog=0)
    served = {
        line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE")
    }
    labels = {
        line.split("{")[0]: line.split("{")[1].split("=")[0]
        for line in text.splitlines()
        if "{" in line and not line.startswith("#") and "_bucket" not in line
    }
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = re.findall(r"^\| `(signoff_\w+)(?:\{(\w+)\})?` \| (.*) \|$", readme, re.MULTILINE)
    said = {
        name: "gauge"
        if what.startswith("gauge:")
        else "histogram"
        if what.startswith("histogram:")
        else "counter"
        for name, _, what in rows
    }
    assert said == served
    assert {name: label for name, label, _ in rows if label} == labels
    assert all(name.endswith("_total") for name, kind in served.items() if kind == "counter")


async def test_metrics_are_served_with_the_exposition_formats_content_type(make_bot: Any) -> None:
    """Prometheus reads the text format by its content type, version 0.0.4 included."""
    bot: Harness = await make_bot()
    async with bot.http.get(bot.url + "/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
