"""memstrata: a layered, local-first memory engine for LLM agents.

The public face is small: ``Memory`` (open a workspace, remember, forget,
list, flush, compact, status), the value types it returns, and the error
tree rooted at ``MemstrataError``.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

from .errors import (
    AccessDenied,
    BackendUnavailable,
    Conflict,
    Corrupt,
    InvalidInput,
    MemstrataError,
    NotFound,
    StorageError,
)
from .memory import Memory
from .model import CompactResult, Item, Source, Status

# A library logs; the application decides where that goes.
logging.getLogger("memstrata").addHandler(logging.NullHandler())

try:
    __version__ = version("memstrata")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "AccessDenied",
    "BackendUnavailable",
    "CompactResult",
    "Conflict",
    "Corrupt",
    "InvalidInput",
    "Item",
    "Memory",
    "MemstrataError",
    "NotFound",
    "Source",
    "Status",
    "StorageError",
    "__version__",
]
