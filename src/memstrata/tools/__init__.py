"""Memory tools for function calling: one definition and one implementation
behind every interface (Python, the MCP server, OpenAI and Anthropic tool
schemas).

* ``specs`` defines each tool once: name, description for a model,
  arguments (JSON Schema with descriptions, enums and bounds, no unknown
  property), result schema, hints (read-only, destructive, idempotent).
  ``openai_tools()``, ``anthropic_tools()`` and the MCP tools
  (``mcp_server.toolset``) are that definition in each format.
* ``handlers`` runs each tool on a ``Memory``; ``calls`` checks the
  arguments and turns the result into text: ``dispatch(memory, name,
  arguments)`` returns JSON, or ``Error: …`` for a refusal or a bad argument
  (never a traceback, never content from outside the workspace); ``answer``
  is the same with the refusal flagged (``Answer.is_error``) and the data
  kept (``Answer.data``), for a protocol that marks errors apart from the
  text (MCP's ``isError``) and carries structured results.
* ``GroupTools(root, main)`` serves callers in groups (``groups``).
* ``memory_tool`` is the client side of Anthropic's memory tool.
* Importing this package loads the definitions only (``catalog``, ``specs``):
  ``answer``, ``call``, ``dispatch`` and ``GroupTools``, which run tools on
  the engine, are imported when first used, so that the MCP server lists its
  tools without loading the engine.

The tools: search, get (a file's lines; a fact by id), list, recent, write,
observe, correct, forget, restore, context, record_turn, sessions,
session_show, session_compact, lessons, lesson_add, and reads and writes of
the core, working, semantic and notebook layers, status (``TOOL_NAMES``).
"""

from __future__ import annotations

import importlib
from copy import deepcopy
from typing import TYPE_CHECKING, Any

from .catalog import BY_NAME, SPECS, WRITES
from .specs import MAX_LINES, Spec, hints

if TYPE_CHECKING:
    from .calls import Answer, answer, call, dispatch
    from .groups import GroupTools

__all__ = [
    "BY_NAME",
    "MAX_LINES",
    "SPECS",
    "TOOLS",
    "TOOL_NAMES",
    "WRITES",
    "Answer",
    "GroupTools",
    "Spec",
    "hints",
    "answer",
    "anthropic_tools",
    "call",
    "dispatch",
    "openai_tools",
]

# What runs tools needs the engine: imported when first asked for (PEP 562), so
# that the definitions (a server listing its tools) load no engine.
_LAZY = {
    "Answer": "calls",
    "answer": "calls",
    "call": "calls",
    "dispatch": "calls",
    "GroupTools": "groups",
    "_HANDLERS": "handlers",  # the handlers by name (a test may wrap one)
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
    value = getattr(module, "HANDLERS" if name == "_HANDLERS" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


TOOL_NAMES = tuple(spec.name for spec in SPECS)
TOOLS: dict[str, dict[str, Any]] = {
    spec.name: {"description": spec.description, "parameters": spec.parameters} for spec in SPECS
}


def openai_tools() -> list[dict[str, Any]]:
    """The tools in OpenAI's function-calling format (a copy: yours to change)."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": deepcopy(spec.parameters),
            },
        }
        for spec in SPECS
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """The tools in Anthropic's tool-use format (a copy: yours to change)."""
    return [
        {
            "name": spec.name,
            "description": spec.description,
            "input_schema": deepcopy(spec.parameters),
        }
        for spec in SPECS
    ]
