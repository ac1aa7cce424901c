"""Running one tool call, the same way for every interface.

* ``SPECS`` is every tool's definition (``specs``), in the order they are
  listed; ``BY_NAME`` the same by name; ``WRITES`` the tools that change
  memory (the group rules give them write access only): ``catalog``'s.
* ``call(memory, name, arguments)`` checks the arguments against the tool's
  schema (``schema.check``: an unknown argument is refused) and runs its
  handler (``handlers``); the result is the tool's JSON object. A ``group``
  argument is for a server that serves groups (``GroupTools``, the
  service): they take it out first; here, a memory without groups refuses it.
* ``answer`` is the result as text (JSON, or ``Error: …`` for a refusal or a
  bad argument, never a traceback) with the refusal flagged
  (``Answer.is_error``, MCP's ``isError``) and the data itself
  (``Answer.data``, MCP's structured content); ``dispatch`` is its text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import InvalidInput, MemstrataError
from ..memory import Memory
from .catalog import BY_NAME, SPECS, WRITES
from .handlers import HANDLERS
from .schema import check

__all__ = [
    "BY_NAME",
    "SPECS",
    "WRITES",
    "Answer",
    "answer",
    "arguments_of",
    "call",
    "dispatch",
    "refusal",
    "success",
]


class Answer(NamedTuple):
    """One tool call's result as text (JSON, or ``Error: …``), whether it is a
    refusal, and the result itself (None for a refusal)."""

    text: str
    is_error: bool
    data: dict[str, Any] | None = None


def call(memory: Memory, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run tool ``name``; its result as data. Raises ``MemstrataError`` or
    ``ValueError`` for a refusal or a bad argument."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(BY_NAME)}")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError("arguments must be an object")
    given = check(spec.parameters, arguments or {})
    if given.pop("group") is not None:
        raise InvalidInput("group: this memory serves no groups (its server was not given one)")
    return HANDLERS[name](memory, given)


def arguments_of(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool arguments as a dict, from a mapping or a JSON string (``ValueError``)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ValueError("the arguments are not valid JSON") from None
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError("arguments must be an object")
    return dict(arguments or {})


def refusal(exc: Exception) -> Answer:
    return Answer(f"Error: {exc}", True)


def success(result: dict[str, Any]) -> Answer:
    return Answer(json.dumps(result, ensure_ascii=False), False, result)


def answer(memory: Memory, name: str, arguments: Mapping[str, Any] | str | None) -> Answer:
    """Run tool ``name`` with ``arguments`` (a mapping or a JSON string); the
    result as text, with refusals (a denied path, a bad argument, a missing
    item ...) flagged."""
    try:
        result = call(memory, name, arguments_of(arguments))
    except (MemstrataError, ValueError) as exc:
        return refusal(exc)
    return success(result)


def dispatch(memory: Memory, name: str, arguments: Mapping[str, Any] | str | None) -> str:
    """Run tool ``name`` with ``arguments`` (a mapping or a JSON string); the
    result as text: JSON, or ``Error: …``."""
    return answer(memory, name, arguments).text
