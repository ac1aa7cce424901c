"""Memory tools for function calling: one implementation behind every interface
(Python, the MCP server, OpenAI and Anthropic tool schemas).

* ``memory_search(query, k=8, layer=None, session=None)`` — documents and
  transcripts merged and ranked; each hit with path, lines, snippet, score.
* ``memory_get(path, from_line=None, lines=None)`` — lines of one memory file,
  through the path guard (``access.resolve_rel``) and the workspace's volume:
  only the workspace's memory files, never anything outside it.
* ``memory_write(text, category=None)`` — a long-term fact with source
  ``agent``: the agent's own writes are kept but never become instructions
  (``observe`` promotes only the user's words).
* ``memory_forget(id)`` and ``memory_status()``.

``dispatch(memory, name, arguments)`` runs one call and returns its result as
text, as models expect: JSON for results, ``Error: …`` for a refusal or a bad
argument (never a traceback, never content from outside the workspace).
``answer`` is the same with the refusal flagged (``Answer.is_error``), for a
protocol that marks errors apart from the text (MCP's ``isError``).

``GroupTools(root, main)`` serves callers in groups (seed 001): every call
names the caller's group; an optional ``group`` argument names another
group, which the rules of ``access.Groups`` allow or refuse (a refusal is an
``Error: …`` saying why, never an empty result). A non-main group's search
also looks in ``global`` (which it may read), each hit saying its group.
Each group's memory opens with that group's own ``memstrata.toml``, the
settings given to ``GroupTools`` over it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..config import load_settings, workspace_location
from ..errors import MemstrataError, NotFound
from ..memory import Memory
from ..model import valid_text
from ..storage.access import GLOBAL, Groups, resolve_rel
from ..storage.files import storage_errors
from ..storage.workspace import Workspace

__all__ = ["TOOLS", "Answer", "GroupTools", "answer", "anthropic_tools", "dispatch", "openai_tools"]

MAX_LINES = 400
GLOBAL_RECHECK_SECONDS = 10.0  # how long a database's missing global group is believed
NOWHERE = "/dev/null/memstrata"  # the groups' "folder" when they are tenants of a database

TOOLS: dict[str, dict[str, Any]] = {
    "memory_search": {
        "description": (
            "Search the user's memory (facts, notes, daily notes, transcripts, lessons). "
            "Returns the best matches with their file, lines and a snippet."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 8},
                "layer": {
                    "type": "string",
                    "description": "only this layer",
                    "enum": [
                        "long_term",
                        "daily_notes",
                        "semantic",
                        "notebook",
                        "transcripts",
                        "lessons",
                        "session_state",
                    ],
                },
                "session": {"type": "string", "description": "only this session"},
            },
            "required": ["query"],
        },
    },
    "memory_get": {
        "description": (
            "Read lines of one memory file (MEMORY.md, memory/<day>.md, semantic/<name>.md, "
            "notes/<folder>/<name>.md, core/<NAME>.md, working/WORKING_MEMORY.md, "
            "summaries/<name>.md)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "from_line": {"type": "integer", "minimum": 1},
                "lines": {"type": "integer", "minimum": 1, "maximum": MAX_LINES},
            },
            "required": ["path"],
        },
    },
    "memory_write": {
        "description": "Keep a fact in long-term memory (stored as the agent's note).",
        "parameters": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "category": {"type": "string", "description": "a MEMORY.md section, e.g. fact"},
            },
            "required": ["text"],
        },
    },
    "memory_forget": {
        "description": "Delete a long-term fact by its id (the ^id at the end of its line).",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
        },
    },
    "memory_status": {
        "description": "Counts of the memory and the health of its search index.",
        "parameters": {"type": "object", "properties": {}},
    },
}


_GROUP = {
    "type": "string",
    "description": "another group's memory (the main group only; 'global' for shared memory)",
}
for _spec in TOOLS.values():
    _spec["parameters"]["properties"]["group"] = _GROUP


def openai_tools() -> list[dict[str, Any]]:
    """The tools in OpenAI's function-calling format."""
    return [
        {"type": "function", "function": {"name": name, **spec}} for name, spec in TOOLS.items()
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """The tools in Anthropic's tool-use format."""
    return [
        {"name": name, "description": spec["description"], "input_schema": spec["parameters"]}
        for name, spec in TOOLS.items()
    ]


def _search(memory: Memory, args: Mapping[str, Any]) -> Any:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _Bad("query must be a non-empty string")
    k = _int(args.get("k", 8), "k", 1, 50)
    layer = args.get("layer")
    layers = None if layer is None else [str(layer)]
    session = args.get("session")
    hits = memory.search(
        query, k=k, layers=layers, session=str(session) if session is not None else None
    )
    return [
        {
            "path": hit.path,
            "lines": [hit.line_start, hit.line_end],
            "citation": hit.citation,
            "snippet": hit.snippet,
            "score": round(hit.score, 4),
            "layer": hit.layer,
            "created_at": hit.created_at.isoformat() if hit.created_at else None,
        }
        for hit in hits
    ]


def _get(memory: Memory, args: Mapping[str, Any]) -> Any:
    requested = args.get("path")
    if not isinstance(requested, str):
        raise _Bad("path must be a string")
    volume = memory.workspace.volume
    rel = resolve_rel(volume, requested, write=False)
    if rel == "MEMORY.md" and not memory.read_only:
        memory.flush()  # what was just written is in it (a no-op when nothing is pending)
    first = _int(args.get("from_line", 1), "from_line", 1, 10**9)
    count = _int(args.get("lines", MAX_LINES), "lines", 1, MAX_LINES)
    with storage_errors(f"read {requested}"):
        data = volume.read(rel)
    if data is None:
        raise _Bad(f"{requested} does not exist")
    every = data.decode("utf-8", "replace").splitlines()
    chosen = every[first - 1 : first - 1 + count]
    return {
        "path": requested,
        "from_line": first,
        "lines": len(chosen),
        "total_lines": len(every),
        "text": "\n".join(chosen),
    }


def _write(memory: Memory, args: Mapping[str, Any]) -> Any:
    text = args.get("text")
    if not isinstance(text, str):
        raise _Bad("text must be a string")
    category = args.get("category")
    item = memory.remember(
        text, category=str(category) if category else None, source="agent", sync=True
    )
    return {"id": item.id, "text": item.text, "category": item.category, "source": "agent"}


def _forget(memory: Memory, args: Mapping[str, Any]) -> Any:
    item_id = args.get("id")
    if not isinstance(item_id, str):
        raise _Bad("id must be a string")
    item = memory.forget(item_id)
    return {"forgotten": item.id, "text": item.text}


def _status(memory: Memory, args: Mapping[str, Any]) -> Any:
    del args
    return {**memory.status().to_dict(), "index": memory.index_status()}


_HANDLERS: dict[str, Callable[[Memory, Mapping[str, Any]], Any]] = {
    "memory_search": _search,
    "memory_get": _get,
    "memory_write": _write,
    "memory_forget": _forget,
    "memory_status": _status,
}


class _Bad(Exception):
    """A bad argument, said back to the model."""


def _int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _Bad(f"{name} must be a whole number from {low} to {high}")
    return value


def call(memory: Memory, name: str, arguments: Mapping[str, Any] | None) -> Any:
    """Run tool ``name``; its result as data. Raises ``MemstrataError`` or
    ``ValueError`` for a refusal or a bad argument."""
    handler = _HANDLERS.get(name)
    if handler is None:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(_HANDLERS)}")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError("arguments must be an object")
    given = {  # text a model sends may hold lone surrogates (model.valid_text)
        key: valid_text(value) if isinstance(value, str) else value
        for key, value in (arguments or {}).items()
    }
    try:
        return handler(memory, given)
    except _Bad as exc:
        raise ValueError(str(exc)) from None


def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool arguments as a dict, from a mapping or a JSON string (``ValueError``)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ValueError("the arguments are not valid JSON") from None
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError("arguments must be an object")
    return dict(arguments or {})


class Answer(NamedTuple):
    """One tool call's result as text (JSON, or ``Error: …``) and whether it is a refusal."""

    text: str
    is_error: bool


def _refusal(exc: Exception) -> Answer:
    return Answer(f"Error: {exc}", True)


def _success(result: Any) -> Answer:
    return Answer(json.dumps(result, ensure_ascii=False), False)


def answer(memory: Memory, name: str, arguments: Mapping[str, Any] | str | None) -> Answer:
    """Run tool ``name`` with ``arguments`` (a mapping or a JSON string); the
    result as text, with refusals (a denied path, a bad argument, a missing
    item ...) flagged."""
    try:
        result = call(memory, name, _arguments(arguments))
    except (MemstrataError, ValueError) as exc:
        return _refusal(exc)
    return _success(result)


def dispatch(memory: Memory, name: str, arguments: Mapping[str, Any] | str | None) -> str:
    """Run tool ``name`` with ``arguments`` (a mapping or a JSON string); the
    result as text: JSON, or ``Error: …``."""
    return answer(memory, name, arguments).text


_WRITES = frozenset({"memory_write", "memory_forget"})


class GroupTools:
    """The memory tools for callers in groups under one root (see the module)."""

    def __init__(self, root: Path | str, main: str, **settings: Any) -> None:
        """``root``: the folder of the groups, or a ``postgresql://`` URL (each
        group a tenant, kept apart by the database; the same rules here).
        ``settings`` (e.g. from the environment) apply over each group's own
        ``memstrata.toml`` (in a folder)."""
        found = workspace_location(root)
        self.url = found if isinstance(found, str) else None
        self.groups = Groups(Path(NOWHERE) if isinstance(found, str) else found, main)
        self._settings = settings
        self._open: dict[str, Memory] = {}
        self._lock = threading.Lock()
        self._no_global_until = 0.0  # (a database) global was missing: look again then

    def adopt(self, memory: Memory) -> None:
        """Use the already open ``memory`` for its group (a server's own)."""
        if memory.workspace.group is None:
            raise ValueError("only a group's memory can be adopted")
        with self._lock:
            self._open[memory.workspace.group] = memory

    def memory(self, group: str) -> Memory:
        """The open memory of ``group`` (opened on first use with its own
        ``memstrata.toml``; no rules applied here)."""
        with self._lock:
            found = self._open.get(group)
            if found is None:
                if self.url is not None:
                    found = Memory.open(self.url, group, **self._settings)
                else:
                    path = Workspace.locate(self.groups.root, group).path
                    settings = {**load_settings(path), **self._settings}
                    found = Memory.open(self.groups.root, group, **settings)
                self._open[group] = found
            return found

    def _has_global(self) -> bool:
        """Whether the ``global`` group exists (non-main searches look there too)."""
        if self.url is None:
            return (self.groups.root / "groups" / GLOBAL).is_dir()
        if GLOBAL in self._open:
            return True
        # On a database, finding out is opening it: not on every search of every group.
        if time.monotonic() < self._no_global_until:
            return False
        try:
            self._open_existing(GLOBAL)
        except NotFound:
            self._no_global_until = time.monotonic() + GLOBAL_RECHECK_SECONDS
            return False
        return True

    def _open_existing(self, group: str) -> None:
        assert self.url is not None
        memory = Memory.open(self.url, group, create=False, **self._settings)
        with self._lock:
            if group in self._open:
                memory.close()
            else:
                self._open[group] = memory

    def dispatch(self, name: str, arguments: Mapping[str, Any] | str | None, *, group: str) -> str:
        """Run tool ``name`` for a caller in ``group``; the result as text."""
        return self.answer(name, arguments, group=group).text

    def answer(self, name: str, arguments: Mapping[str, Any] | str | None, *, group: str) -> Answer:
        """Run tool ``name`` for a caller in ``group``; the result as text, refusals flagged."""
        try:
            given = _arguments(arguments)
            target = given.pop("group", None)
            if target is not None and not isinstance(target, str):
                raise ValueError("group must be a string")
            acting = self.groups.check(group, target, write=name in _WRITES)
            result = call(self.memory(acting), name, given)
            if name == "memory_search" and target is None and acting != GLOBAL:
                result = [{**hit, "group": acting} for hit in result]
                if self._has_global():
                    shared = call(self.memory(GLOBAL), name, given)
                    result += [{**hit, "group": GLOBAL} for hit in shared]
                    result.sort(key=lambda hit: -hit["score"])
                    result = result[: given.get("k", 8)]
        except (MemstrataError, ValueError) as exc:
            return _refusal(exc)
        return _success(result)

    def flush(self) -> None:
        """Make every open group's memory durable now (``Memory.flush``)."""
        with self._lock:
            opened = list(self._open.values())
        for memory in opened:
            memory.flush()

    def close(self) -> None:
        with self._lock:
            for memory in self._open.values():
                memory.close()
            self._open.clear()
