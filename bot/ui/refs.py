"""A record id short enough for Slack's smallest fields: an option's value holds 150
characters and a block id 255, but a record id ``<run>/<interrupt>`` may hold 257.

An id that fits is carried as it is; a longer one as ``<run>/~<key>``, its interrupt id's
digest, which names one pending record of the run once looked up in storage.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final

LONGEST: Final = 141
"""The longest record id carried whole: ``withdraw <record id>`` fills an option value."""
_MARK: Final = "/~"


def short_ref(record_id: str) -> str:
    """``record_id`` itself when it fits in ``LONGEST``, else ``<run>/~<key>``."""
    if len(record_id) <= LONGEST:
        return record_id
    run_id, _, interrupt_id = record_id.partition("/")
    digest = hashlib.sha256(interrupt_id.encode()).digest()
    return f"{run_id}{_MARK}{base64.urlsafe_b64encode(digest).decode()[:11]}"


def is_short_ref(value: str) -> bool:
    """Whether ``value`` is a key standing for a longer record id (a record id has no ``~``)."""
    return _MARK in value
