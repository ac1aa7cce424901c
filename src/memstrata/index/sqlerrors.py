"""SQLite errors of the index, mapped onto memstrata's error tree in one place.

No ``sqlite3`` exception leaves the index: ``mapped`` turns each into

* ``Conflict`` for a lock another process held past the busy timeout
  (``SQLITE_BUSY``, ``SQLITE_LOCKED``) or a constraint the file no longer
  meets (it changed under us);
* ``IndexCorrupt`` (a ``Corrupt``) for a file that is not, or no longer, an
  index: malformed, not a database, or without the tables it should have.
  The index is derived from the workspace's files, so ``Index`` rebuilds it;
* ``StorageError`` for everything else: disk I/O, disk full, read-only or
  unopenable file, a connection already closed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import Conflict, Corrupt, MemstrataError, StorageError

__all__ = ["BUSY_SECONDS", "IndexCorrupt", "is_busy", "mapped", "while_busy"]

T = TypeVar("T")

# How long a statement waits for another process's lock (SQLite's busy
# handler, which sleeps in growing steps) before it fails as ``Conflict``.
BUSY_SECONDS = 5.0

_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_CONSTRAINT = frozenset({sqlite3.SQLITE_CONSTRAINT})
_CORRUPT = frozenset(
    {
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_ERROR,  # "no such table": not the file it should be
        sqlite3.SQLITE_SCHEMA,
        sqlite3.SQLITE_MISMATCH,
        sqlite3.SQLITE_FORMAT,
    }
)


class IndexCorrupt(Corrupt):
    """The index file is not what it should be; it is (being) rebuilt."""


def mapped(exc: sqlite3.Error, path: Path, doing: str) -> MemstrataError:
    """The error of memstrata's tree that stands for ``exc`` (see the module)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if is_busy(exc):
        return Conflict(
            f"cannot {doing}: the search index {path} is busy (another process held it "
            f"for more than {BUSY_SECONDS:g} s); try again"
        )
    if primary in _CONSTRAINT:
        return Conflict(f"cannot {doing}: the search index {path} changed under us ({exc})")
    if primary in _CORRUPT:
        return IndexCorrupt(f"cannot {doing}: the search index {path} is damaged ({exc})")
    return StorageError(f"cannot {doing}: the search index {path}: {exc}")


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is another connection's lock (``SQLITE_BUSY``/``LOCKED``)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _BUSY


def while_busy(attempt: Callable[[], T], *, seconds: float = BUSY_SECONDS) -> T:
    """``attempt()``, tried again while it fails busy, for up to ``seconds``.

    SQLite answers some lock waits with ``SQLITE_BUSY`` at once instead of
    calling its busy handler: switching a file to WAL or opening its WAL while
    the last connection of another process closes it (checkpoint and delete)
    or recovers it. Seen as one search in ~60 failing when four processes
    open a new workspace together. Those are short, so they are waited out
    here in growing steps (1 ms to 50 ms), like the busy handler would.
    """
    deadline = time.monotonic() + seconds
    pause = 0.001
    while True:
        try:
            return attempt()
        except sqlite3.Error as exc:
            if not is_busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
