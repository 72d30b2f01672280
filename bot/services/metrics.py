"""Prometheus text metrics: pending interrupts, decisions, dead-lettered resumes, ack and
click-to-resume latency."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

_ACK_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 3.0)
_RESUME_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0)


@dataclass
class Histogram:
    """A cumulative histogram in seconds."""

    buckets: Sequence[float]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, seconds)] += 1
        self.total += seconds
        self.count += 1

    def render(self, name: str) -> list[str]:
        lines, running = [f"# TYPE {name} histogram"], 0
        for bound, n in zip(self.buckets, self.counts, strict=False):
            running += n
            lines.append(f'{name}_bucket{{le="{bound}"}} {running}')
        lines.append(f'{name}_bucket{{le="+Inf"}} {self.count}')
        lines += [f"{name}_sum {self.total:.6f}", f"{name}_count {self.count}"]
        return lines


class Metrics:
    """The bot's counters and histograms, rendered for ``/metrics``."""

    def __init__(self) -> None:
        self.decisions: Counter[str] = Counter()
        self.refusals: Counter[str] = Counter()
        self.webhooks: Counter[str] = Counter()
        """Webhook attempts by what came of them: delivered, retried, dropped."""
        self.resume_dead_letters = 0
        self.damaged_records = 0
        self.ack = Histogram(_ACK_BUCKETS)
        self.click_to_resume = Histogram(_RESUME_BUCKETS)

    def render(
        self,
        *,
        pending: int | None,
        queue_lag: int | None,
        click_backlog: int | None,
        damaged_read: int = 0,
        loops_failing: int = 0,
    ) -> str:
        """Prometheus text; the gauges read from Redis are left out when it is down."""
        lines = _gauge("signoff_background_loops_failing", loops_failing)
        if pending is not None:
            lines += _gauge("signoff_pending_interrupts", pending)
        if queue_lag is not None:
            lines += _gauge("signoff_resume_queue_lag", queue_lag)
        if click_backlog is not None:
            lines += _gauge("signoff_click_backlog", click_backlog)
        lines += _counter("signoff_decisions_total", "outcome", self.decisions)
        lines += _counter("signoff_refused_clicks_total", "reason", self.refusals)
        lines += _counter("signoff_webhook_attempts_total", "outcome", self.webhooks)
        lines += [
            "# TYPE signoff_resume_dead_letters_total counter",
            f"signoff_resume_dead_letters_total {self.resume_dead_letters}",
            "# TYPE signoff_damaged_records_total counter",
            f"signoff_damaged_records_total {self.damaged_records}",
            "# TYPE signoff_damaged_records_read_total counter",
            f"signoff_damaged_records_read_total {damaged_read}",
        ]
        lines += self.ack.render("signoff_ack_seconds")
        lines += self.click_to_resume.render("signoff_click_to_resume_seconds")
        return "\n".join(lines) + "\n"


def _gauge(name: str, value: int) -> list[str]:
    return [f"# TYPE {name} gauge", f"{name} {value}"]


def _counter(name: str, label: str, values: Counter[str]) -> list[str]:
    lines = [f"# TYPE {name} counter"]
    lines += [f'{name}{{{label}="{_escaped(k)}"}} {v}' for k, v in sorted(values.items())]
    return lines


def _escaped(value: str) -> str:
    """A label value as the exposition format writes it: backslash, quote, newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
