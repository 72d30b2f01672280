"""How the bot logs: text on a terminal, one JSON object per line otherwise (or as
``SIGNOFF_LOG_FORMAT`` says), with the ids of the work at hand on every line.

The standard library's logging with a small formatter, not another dependency: every
library the bot uses (slack-sdk, aiohttp, redis-py, Bolt) already logs through it, so
their lines come out in the same shape, with the same ids.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import TextIO, TypeAlias

from bot.errors import ConfigError
from bot.services.log_context import FIELDS, current_ids

from .redaction import RedactFilter, redacted
from .settings import env_value

_ExcInfo: TypeAlias = (
    tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
)

FORMATS = ("text", "json")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class IdsFilter(logging.Filter):
    """Puts the ids of the work at hand on each record (``record.ids``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.ids = current_ids()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, process id, logger, message, the ids, and
    the error."""

    def formatException(self, ei: _ExcInfo) -> str:
        """The traceback without the secrets its exceptions may quote."""
        return redacted(super().formatException(ei))

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "pid": record.process,
            "logger": record.name,
            "event": record.getMessage(),
        }
        ids: Mapping[str, str] = getattr(record, "ids", {})
        line.update({name: ids[name] for name in FIELDS if name in ids})
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


_CONTROL = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029"
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidirectional ("Trojan Source")
)


class TextFormatter(logging.Formatter):
    """The classic line, with the ids at its end when there are any. Control characters in
    the message (a tool name or an error an agent gives) are shown escaped: they could
    forge a line, take over the terminal or make a line read reversed. A traceback keeps
    its lines, not its secrets."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        shown = copy.copy(record)  # other handlers get the record as it was
        shown.message = _CONTROL.sub(_escaped, record.message)
        return super().formatMessage(shown)

    def formatException(self, ei: _ExcInfo) -> str:
        """The traceback with its lines, but what its exceptions say escaped, as a message
        is (an agent's error text could forge a line there too), and without secrets."""
        text = super().formatException(ei)
        for said in _said(ei[1]):
            text = text.replace(said, _CONTROL.sub(_escaped, said))
        return redacted(text)

    def formatStack(self, stack_info: str) -> str:
        return redacted(super().formatStack(stack_info))

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and record.exc_text:  # another handler's, unescaped, unredacted
            record = copy.copy(record)
            record.exc_text = None  # so this formatter makes its own
        text = super().format(record)
        ids: Mapping[str, str] = getattr(record, "ids", {})
        shown = " ".join(f"{name}={ids[name]}" for name in FIELDS if name in ids)
        return f"{text} [{shown}]" if shown else text


def _escaped(control: re.Match[str]) -> str:
    return control.group().encode("unicode_escape").decode("ascii")


def _said(error: BaseException | None) -> list[str]:
    """What ``error`` and the exceptions chained to it say (messages and notes), where
    that holds a control character."""
    said: list[str] = []
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        try:
            texts = [str(error), *map(str, getattr(error, "__notes__", ()))]
        except Exception:  # an exception whose str() fails prints no message to escape
            texts = []
        said += [text for text in texts if _CONTROL.search(text)]
        error = error.__cause__ or error.__context__
    return said


def configure_logging(environ: Mapping[str, str], stream: TextIO | None = None) -> None:
    """Log to ``stream`` (stderr) at ``SIGNOFF_LOG_LEVEL`` (INFO) in ``SIGNOFF_LOG_FORMAT``
    (``text`` on a terminal, else ``json``), each read as the other settings are."""
    out = stream or sys.stderr
    given = env_value(environ, "SIGNOFF_LOG_FORMAT") or ("text" if out.isatty() else "json")
    chosen = given.lower()  # read in any case, as the level is
    if chosen not in FORMATS:
        raise ConfigError(f"SIGNOFF_LOG_FORMAT={given!r}: use one of {', '.join(FORMATS)}")
    level = env_value(environ, "SIGNOFF_LOG_LEVEL") or "INFO"
    if level.upper() not in LEVELS:
        raise ConfigError(f"SIGNOFF_LOG_LEVEL={level!r}: use one of {', '.join(LEVELS)}")
    handler = logging.StreamHandler(out)
    handler.addFilter(IdsFilter())
    handler.addFilter(RedactFilter())
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
