"""What is wrong with a damaged stored record, said without quoting what it holds: a
record may carry a callback URL, a token or a job's text, which no log line or answer
may show."""

from __future__ import annotations

import json

from pydantic import ValidationError


def what_is_wrong(exc: BaseException) -> str:
    """``exc`` (raised reading a record) as the fields and problems it names, no values."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'the record'}: {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)
        )
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON (line {exc.lineno} column {exc.colno})"
    if isinstance(exc, KeyError) and exc.args:
        return f"missing field {exc.args[0]}"
    return f"a value is not of the form expected ({type(exc).__name__})"
