"""``q15``: a q15 memory folder (``/memory``).

* ``history/turns/YYYY/MM/DD/*.json`` (every schema version: flat messages,
  ``schema_version: 2`` parts, today's 3) become transcript turns
  (``migrations.transcripts.q15_turn`` reads them; text, reasoning, tool
  calls and tool results kept as parts), the turn's id, seq and file in its
  meta, its time kept;
* ``core/`` (every ``core/<name>.md``: AGENT.md, USER.md, SOUL.md and the
  others q15 keeps, e.g. PROJECT.md), ``working/WORKING_MEMORY.md``,
  ``semantic/`` and ``notes/`` become the same files here; a file memstrata
  does not keep (a folder inside ``core/``, a file that is not ``.md`` ...)
  is skipped with the reason;
* ``history/state/``, ``history/quarantine/`` and ``cognition/`` are q15's
  own machinery: reported as skipped.

q15's files are never changed, except with ``--move`` (``remove_taken``):
the turn files whose turns are in memory are then removed from q15's folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..migrations.transcripts import q15_turn
from ..storage.access import allowed
from ..stores.transcripts import PART_TYPES, ROLES
from .apply import ImportReport
from .base import Document, Record, Skip, TurnRecord, read_text, stable_key

__all__ = ["read", "remove_taken"]

_LAYERS = ("core", "working", "semantic", "notes")
_MACHINERY = ("history/state/", "history/quarantine/", "cognition/")


def read(source: Path) -> Iterator[Record]:
    """Every item of a q15 memory folder (see the module)."""
    for path in sorted((source / "history" / "turns").glob("*/*/*/*.json")):
        yield _turn(path, path.relative_to(source).as_posix())
    for layer in _LAYERS:
        for path in sorted((source / layer).rglob("*")):
            if path.is_file():
                yield _layer_file(path, path.relative_to(source).as_posix())
    for machinery in _MACHINERY:
        for path in sorted((source / machinery).rglob("*")):
            if path.is_file():
                rel = path.relative_to(source).as_posix()
                yield Skip(rel, "q15's own machinery (state, quarantine, cognition)")


def _turn(path: Path, rel: str) -> Record:
    text = read_text(path)
    if text is None:
        return Skip(rel, "not UTF-8 text")
    try:
        record, aside = _known_parts(json.loads(text))
        turn = q15_turn(record, rel)
    except (ValueError, TypeError, KeyError) as exc:
        return Skip(rel, f"not a q15 turn: {exc}")
    parts = {"user": [], "assistant": [], "reasoning": []}  # type: dict[str, list[str]]
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for message in turn.messages:
        role = str(message.get("role"))
        for part in message.get("parts", ()):
            _part(role, part, parts, calls, results)
    return TurnRecord(
        ref=rel,
        session=turn.session,
        key=stable_key("q15", turn.id),
        user="\n".join(parts["user"]),
        assistant="\n".join(parts["assistant"]),
        reasoning="\n".join(parts["reasoning"]) or None,
        tool_calls=calls,
        tool_results=results,
        meta={"q15": {"id": turn.id, "seq": turn.seq, "file": rel} | aside},
        at=turn.created_at,
    )


def _known_parts(record: Any) -> tuple[Any, dict[str, Any]]:
    """``record`` with the parts and messages memstrata has no type for set
    aside (a later schema's), and what was set aside (kept in the turn's meta)."""
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        return record, {}
    messages, other_parts, other_messages = [], [], []
    for message in record["messages"]:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            other_messages.append(message)
        elif isinstance(message.get("parts"), list):
            parts = [
                p for p in message["parts"] if isinstance(p, dict) and p.get("type") in PART_TYPES
            ]
            other_parts += [p for p in message["parts"] if p not in parts]
            messages.append(message | {"parts": parts})
        else:
            messages.append(message)
    aside: dict[str, Any] = {}
    if other_parts:
        aside["other_parts"] = other_parts
    if other_messages:
        aside["other_messages"] = other_messages
    if "schema_version" in record:
        aside["schema_version"] = record["schema_version"]
    return record | {"messages": messages}, aside


def _part(
    role: str,
    part: Mapping[str, Any],
    parts: dict[str, list[str]],
    calls: list[dict[str, Any]],
    results: list[dict[str, Any]],
) -> None:
    kind = part.get("type")
    if kind == "text":
        parts["assistant" if role == "assistant" else "user"].append(str(part.get("text", "")))
    elif kind == "reasoning":
        parts["reasoning"].append(str(part.get("text", "")))
    elif kind == "tool_call":
        call = {"name": str(part.get("name") or "unknown"), "arguments": part.get("arguments", {})}
        if part.get("id"):
            call["id"] = str(part["id"])
        calls.append(call)
    elif kind == "tool_result":
        content = part.get("content", part.get("output", part.get("result", "")))
        result: dict[str, Any] = {"content": content if content is not None else ""}
        for key in ("tool_call_id", "name", "source"):
            if part.get(key) is not None:
                result[key] = part[key]
        if isinstance(part.get("success"), bool):
            result["success"] = part["success"]
        results.append(result)


def _layer_file(path: Path, rel: str) -> Record:
    if not allowed(rel):
        return Skip(rel, "not a file memstrata keeps in this layer")
    text = read_text(path)
    if text is None:
        return Skip(rel, "not UTF-8 text")
    return Document(rel, rel, text)


def remove_taken(source: Path, report: ImportReport) -> list[str]:
    """``--move``: remove from q15's folder each turn file whose turn is now in
    memory (taken, or already imported before); the rest stay."""
    done = {entry["ref"] for entry in report.taken if entry["what"] == "turn"}
    done |= {
        entry["ref"] for entry in report.skipped if entry["reason"].startswith("already imported")
    }
    moved = []
    for rel in sorted(done):
        if rel.startswith("history/turns/"):
            (source / rel).unlink(missing_ok=True)
            moved.append(rel)
    return moved
