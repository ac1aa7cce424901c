"""The facade: ``Memory``, the one object an agent holds for a workspace, and
the parts it is built from (engine, sessions, layers, documents, search,
context)."""

from __future__ import annotations

from .facade import Memory

__all__ = ["Memory"]
