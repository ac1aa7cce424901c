"""``miqi``: a MiQi workspace (``~/.miqi/workspace``).

* ``memory/LTM_SNAPSHOT.json`` (``{"version", "items": [...]}`` or a bare
  list): each item (``id, text, source, session_key, created_at, updated_at,
  hits``) one fact, its session key its session, its time kept, its id,
  source and hits in the import ledger;
* ``memory/LESSONS.jsonl``: each lesson one fact of category ``lesson``;
* ``memory/LTM_AUDIT.jsonl``, ``memory/LESSONS_AUDIT.jsonl``: the history of
  the two files above, which hold the current state: each event is reported
  as skipped with that reason (nothing is lost: the items are in the snapshot);
* ``memory/MEMORY.md``: one fact per note line; other ``memory/*.md`` (daily
  notes) are documents;
* sessions, both layouts: ``sessions/*.jsonl`` (a ``_type: metadata`` first
  line, then messages) and ``sessions/<key>/conversation.jsonl``; the
  session key (``telegram:12345``, from the metadata line, else the name) is
  the session, a turn starts at each user message, the assistant's
  ``tool_calls`` and the tool messages are its parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .base import (
    Document,
    Fact,
    Record,
    Skip,
    json_lines,
    json_objects,
    markdown_facts,
    read_text,
    time_of,
    turns_from_messages,
)
from .markdown import document_path

__all__ = ["read"]


def read(source: Path) -> Iterator[Record]:
    """Every item of a MiQi workspace (see the module)."""
    memory = source / "memory"
    yield from _snapshot(memory / "LTM_SNAPSHOT.json", "memory/LTM_SNAPSHOT.json")
    yield from _lessons(memory / "LESSONS.jsonl", "memory/LESSONS.jsonl")
    for audit in ("LTM_AUDIT.jsonl", "LESSONS_AUDIT.jsonl"):
        yield from _audit(memory / audit, f"memory/{audit}")
    if memory.is_dir():
        for path in sorted(memory.glob("*.md")):
            rel = f"memory/{path.name}"
            text = read_text(path)
            if text is None:
                yield Skip(rel, "not UTF-8 text")
            elif path.name == "MEMORY.md":
                yield from markdown_facts(text, rel)
            else:
                yield Document(rel, document_path(rel), text)
    yield from _sessions(source / "sessions")


def _snapshot(path: Path, ref: str) -> Iterator[Record]:
    if not path.is_file():
        return
    text = read_text(path)
    try:
        data: Any = json.loads(text) if text is not None else None
    except ValueError as exc:
        yield Skip(ref, f"not JSON: {exc}")
        return
    items = data.get("items") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        yield Skip(ref, "no list of items")
        return
    for number, item in enumerate(items, 1):
        where = f"{ref}#{number}"
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
            yield Skip(where, "an item without text")
            continue
        keep = ("id", "source", "session_key", "created_at", "updated_at", "hits")
        yield Fact(
            where,
            item["text"],
            session=_session_key(item.get("session_key")),
            at=time_of(item.get("created_at")),
            original={k: item[k] for k in keep if k in item},
        )


def _session_key(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


_LESSON_TEXT = ("text", "lesson", "rule", "content", "summary")


def _lessons(path: Path, ref: str) -> Iterator[Record]:
    if not path.is_file():
        return
    for entry in json_objects(path, ref):
        if isinstance(entry, Skip):
            yield entry
            continue
        where, value = entry
        text = next((value[k] for k in _LESSON_TEXT if isinstance(value.get(k), str)), None)
        if text is None:
            parts = [
                str(value[k]) for k in ("trigger", "bad_action", "better_action") if value.get(k)
            ]
            text = " -> ".join(parts) or None
        if text is None:
            yield Skip(where, "a lesson without text")
            continue
        yield Fact(
            where,
            text,
            "lesson",
            session=_session_key(value.get("session_key")),
            at=time_of(value.get("created_at")),
            original=dict(value),
        )


def _audit(path: Path, ref: str) -> Iterator[Record]:
    if not path.is_file():
        return
    for entry in json_lines(path, ref):
        where = entry.ref if isinstance(entry, Skip) else entry[0]
        yield Skip(where, "an audit event: the snapshot or lessons file holds the current items")


def _sessions(folder: Path) -> Iterator[Record]:
    if not folder.is_dir():
        return
    files = sorted(folder.glob("*.jsonl")) + sorted(folder.glob("*/conversation.jsonl"))
    for path in files:
        rel = path.relative_to(folder.parent).as_posix()
        fallback = path.stem if path.name != "conversation.jsonl" else path.parent.name
        yield from _session(path, rel, fallback)


def _session(path: Path, rel: str, fallback: str) -> Iterator[Record]:
    session = fallback
    messages: list[tuple[str, Mapping[str, Any]]] = []
    for entry in json_objects(path, rel):
        if isinstance(entry, Skip):
            yield entry
            continue
        where, value = entry
        if value.get("_type") == "metadata":
            session = _session_key(value.get("key") or value.get("session_key")) or session
        elif isinstance(value.get("role"), str):
            messages.append((where, value))
        else:
            yield Skip(where, "neither a message nor the metadata line")
    yield from turns_from_messages(messages, session, f"miqi:{session}")
