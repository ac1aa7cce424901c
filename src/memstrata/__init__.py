"""memstrata: a layered, local-first memory engine for LLM agents.

The public face is small: ``Memory`` (open a workspace, remember, forget,
list, flush, compact, status), the value types it returns, and the error
tree rooted at ``MemstrataError``.

Importing ``memstrata`` is cheap: ``Memory`` and the value types are loaded
on first use (PEP 562 ``__getattr__``), so ``memstrata --version`` and a
program that only names the error types do not pay for the engine.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .memory import Memory
    from .model import CompactResult, Item, Source, Status

# The one source of the version: pyproject.toml reads it at build time (so that
# `memstrata --version` needs no importlib.metadata).
__version__ = "0.1.0"

# A library logs; the application decides where that goes.
logging.getLogger("memstrata").addHandler(logging.NullHandler())

_LAZY = {
    "Memory": "memstrata.memory",
    "CompactResult": "memstrata.model",
    "Item": "memstrata.model",
    "Source": "memstrata.model",
    "Status": "memstrata.model",
}


def __getattr__(name: str) -> Any:
    """The engine's names, imported when first asked for (then cached)."""
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module 'memstrata' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
