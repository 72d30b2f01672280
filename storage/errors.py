"""Errors raised by storage; every one derives from StorageError."""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every error storage raises on purpose."""


class StorageUnavailableError(StorageError):
    """Redis could not be reached, even after retrying with backoff, or timed out."""


class StorageTimeoutError(StorageUnavailableError):
    """Redis did not answer in time: the command may have run or not."""


class StorageAuthError(StorageError):
    """Redis refused the credentials in the URL."""


class StorageResponseError(StorageError):
    """Redis answered a command with an error (wrong key type, script failure, ...)."""


class CorruptRecordError(StorageError):
    """One record under our prefix could not be read back; the others are unaffected."""

    def __init__(self, key: str, problem: str, *, field: str | None = None) -> None:
        """``field``: the one field of hash ``key`` that is damaged; the others are fine."""
        where = f"record {key}" if field is None else f"field {field!r} of record {key}"
        what = "that key" if field is None else f"that field alone (HDEL {key} {field})"
        super().__init__(
            f"{where} is corrupt or was written by something else ({problem}); "
            f"inspect it with redis-cli, then delete or repair {what}"
        )
        self.key = key


class InvalidIdError(StorageError):
    """An id (run, thread, interrupt, user, channel) has a shape storage refuses to key on."""


class DuplicateInterruptError(StorageError):
    """An interrupt record with the same id already exists."""


class PendingLimitError(StorageError):
    """A client's requests hold as many pending records as it may have: nothing was
    written; some must be decided (or withdrawn) before it asks for more."""

    def __init__(self, client: str, *, limit: int) -> None:
        super().__init__(f"client {client!r} has {limit} requests pending, the most it may")
        self.client = client
        self.limit = limit


class EmbeddedServerError(StorageError):
    """The embedded Redis server could not be found, started or stopped."""
