"""``jsonl`` and ``mem0``: facts from a generic JSONL file and from mem0's export.

* ``jsonl``: one JSON object a line, ``{"text", "created_at"?, "category"?,
  "user"?, "session"?, "id"?}`` (what ``memstrata export jsonl`` writes).
* ``mem0``: mem0's export shape, ``{"memory", "id", "created_at",
  "updated_at"?, "user_id"?, "metadata"?, "categories"?}``, as a JSON list, an
  object with ``results`` (or ``memories``), or one object a line.

SOURCE is a file, or a folder whose ``*.jsonl`` / ``*.json`` files are read in
name order. Every line or entry becomes one fact, or one skip with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .base import Fact, Record, Skip, json_lines, read_text, time_of

__all__ = ["read_jsonl", "read_mem0"]


def _files(source: Path) -> list[tuple[Path, str]]:
    if source.is_file():
        return [(source, source.name)]
    found = sorted(p for p in source.iterdir() if p.suffix in (".jsonl", ".json") and p.is_file())
    return [(path, path.name) for path in found]


def read_jsonl(source: Path) -> Iterator[Record]:
    """Facts from generic JSONL lines (see the module)."""
    for path, ref in _files(source):
        for entry in json_lines(path, ref):
            if isinstance(entry, Skip):
                yield entry
            else:
                yield _generic(*entry)


def _generic(ref: str, value: Any) -> Record:
    if not isinstance(value, Mapping):
        return Skip(ref, "not a JSON object")
    text = value.get("text", value.get("memory"))
    if not isinstance(text, str) or not text.strip():
        return Skip(ref, "no text")
    original = {k: value[k] for k in ("id", "created_at", "updated_at") if k in value}
    return Fact(
        ref,
        text,
        _str(value.get("category")),
        _str(value.get("user")),
        _str(value.get("session")),
        time_of(value.get("created_at")),
        original,
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def read_mem0(source: Path) -> Iterator[Record]:
    """Facts from mem0's export (see the module)."""
    for path, ref in _files(source):
        text = read_text(path)
        if text is None:
            yield Skip(ref, "not UTF-8 text")
            continue
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None  # one object a line
        if whole is None:
            for entry in json_lines(path, ref):
                yield entry if isinstance(entry, Skip) else _mem0(*entry)
            continue
        if isinstance(whole, Mapping):
            whole = whole.get("results", whole.get("memories", [whole]))
        if not isinstance(whole, list):
            yield Skip(ref, "neither a list of memories nor an object with results")
            continue
        for number, value in enumerate(whole, 1):
            yield _mem0(f"{ref}#{number}", value)


def _mem0(ref: str, value: Any) -> Record:
    if not isinstance(value, Mapping):
        return Skip(ref, "not a JSON object")
    text = value.get("memory", value.get("text"))
    if not isinstance(text, str) or not text.strip():
        return Skip(ref, "no memory text")
    raw = value.get("metadata")
    metadata: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    categories = value.get("categories")
    category = _str(metadata.get("category")) or (
        _str(categories[0]) if isinstance(categories, list) and categories else None
    )
    keep = ("id", "created_at", "updated_at", "user_id", "agent_id", "run_id", "hash")
    original = {k: value[k] for k in keep if k in value}
    if metadata:
        original["metadata"] = dict(metadata)
    if categories:
        original["categories"] = categories
    return Fact(
        ref,
        text,
        category,
        _str(value.get("user_id")),
        _str(value.get("run_id")),
        time_of(value.get("created_at")),
        original,
    )
