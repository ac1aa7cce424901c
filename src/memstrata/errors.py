"""The one error tree of memstrata.

Every error the library raises on purpose is a ``MemstrataError``; callers
that want "anything memstrata refused" catch the root, callers that care
about a case catch the child::

    MemstrataError
     ├── InvalidInput        bad arguments: empty text, unknown setting, bad id
     ├── NotFound            no item / file / group by that name
     ├── AccessDenied        a group or path rule refused the call
     ├── Conflict            the workspace is busy (lock timeout) or changed under us
     ├── Corrupt             a file could not be read as what it should be
     ├── StorageError        the operating system refused a read or write
     └── BackendUnavailable  an optional backend (model, server) cannot be used

The library never prints: the CLI turns these into one line on stderr and
a non-zero exit. Builtins are never shadowed (no ``MemoryError`` here).
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "BackendUnavailable",
    "Conflict",
    "Corrupt",
    "InvalidInput",
    "MemstrataError",
    "NotFound",
    "StorageError",
]


class MemstrataError(Exception):
    """Root of every error memstrata raises on purpose."""


class InvalidInput(MemstrataError, ValueError):
    """The caller passed something memstrata cannot accept."""


class NotFound(MemstrataError, LookupError):
    """The named item, file or group does not exist."""


class AccessDenied(MemstrataError):
    """A group or path rule refused the call."""


class Conflict(MemstrataError):
    """The workspace is busy (another writer holds it too long) or changed under us."""


class Corrupt(MemstrataError):
    """A file could not be read as what it should be."""


class StorageError(MemstrataError, OSError):
    """The operating system refused a read or a write (permissions, disk full, ...)."""


class BackendUnavailable(MemstrataError):
    """An optional backend (embedding model, database server, LLM) cannot be used."""
