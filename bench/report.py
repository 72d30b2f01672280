"""How every benchmark reports: a readable table of its figures, then, as its last line,
one JSON object with every figure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def report(figures: Mapping[str, Any]) -> None:
    width = max(len(k) for k in figures)
    print(f"{'figure':<{width}}  value")
    print(f"{'-' * width}  -----")
    for name, value in figures.items():
        print(f"{name:<{width}}  {value}")
    print(json.dumps(dict(figures)))
