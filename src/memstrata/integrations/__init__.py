"""Adapters that plug memstrata into agent frameworks, one module per framework.

Each module imports its framework lazily-by-module (importing
``memstrata.integrations.langgraph`` imports LangGraph; importing this package
imports nothing heavy) and says how to install it when it is missing:

* ``langgraph``     — ``MemstrataStore``, a LangGraph ``BaseStore``;
* ``openai_agents`` — ``MemstrataSession``, an OpenAI Agents SDK ``Session``;
* ``anthropic``     — ``MemstrataMemoryTool``, the Anthropic SDK's memory tool;
* ``clients``       — the MCP config snippet of each MCP client (no dependency).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from ..errors import BackendUnavailable

__all__ = ["require"]


def require(module: str, extra: str = "integrations") -> ModuleType:
    """Import ``module`` or raise ``BackendUnavailable`` with the install hint."""
    try:
        return import_module(module)
    except ImportError as exc:
        raise BackendUnavailable(
            f"{module} is not installed: pip install 'memstrata[{extra}]' ({exc})"
        ) from None
