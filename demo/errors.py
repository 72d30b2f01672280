"""The demo's one error type: a problem a person fixes before starting it again."""

from __future__ import annotations


class DemoError(Exception):
    """The demo cannot start; the message says why and what to do."""
