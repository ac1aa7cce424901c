"""``qracer``: a qracer home (``~/.qracer``).

* per-session audit logs, JSONL (``sessions/*.jsonl``, ``audit/*.jsonl`` or
  ``*.jsonl`` at the top; the file name is the session): lines ``{turn,
  role, content, tool, args, success, source, ts}`` grouped by ``turn`` into
  one transcript turn each: the user's message, the ``tool_call`` lines as
  tool calls, the ``tool_result`` lines as results (with success and
  source), the assistant's answer; every other field (``conviction`` ...) is
  kept in the turn's meta, per role; the first line's ``ts`` is the turn's time;
* ``summaries/*.md``: documents ``summaries/<name>.md``;
* ``MEMORY.md``: one fact per line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .base import (
    Document,
    Record,
    Skip,
    TurnRecord,
    doc_name,
    json_lines,
    markdown_facts,
    read_text,
    stable_key,
    time_of,
)

__all__ = ["read"]

_KNOWN = {"turn", "role", "content", "tool", "args", "success", "source", "ts"}


def read(source: Path) -> Iterator[Record]:
    """Every item of a qracer home (see the module)."""
    logs = [*sorted(source.glob("*.jsonl"))]
    for folder in ("sessions", "audit"):
        logs += sorted((source / folder).glob("*.jsonl"))
    for path in logs:
        yield from _log(path, path.relative_to(source).as_posix())
    for path in sorted((source / "summaries").glob("*.md")):
        rel = path.relative_to(source).as_posix()
        text = read_text(path)
        if text is None:
            yield Skip(rel, "not UTF-8 text")
        else:
            yield Document(rel, f"summaries/{doc_name(path.stem)}.md", text)
    memory = source / "MEMORY.md"
    if memory.is_file():
        text = read_text(memory)
        yield from (
            markdown_facts(text, "MEMORY.md")
            if text is not None
            else [Skip("MEMORY.md", "not UTF-8 text")]
        )


def _log(path: Path, rel: str) -> Iterator[Record]:
    turns: dict[Any, list[tuple[str, Mapping[str, Any]]]] = {}
    for entry in json_lines(path, rel):
        if isinstance(entry, Skip):
            yield entry
            continue
        where, value = entry
        if not isinstance(value, Mapping) or "turn" not in value or "role" not in value:
            yield Skip(where, "not an audit line (no turn or role)")
            continue
        turns.setdefault(json.dumps(value["turn"]), []).append((where, value))
    for number, lines in turns.items():
        yield _turn(path.stem, rel, number, lines)


def _turn(
    session: str, rel: str, number: str, lines: list[tuple[str, Mapping[str, Any]]]
) -> Record:
    user, assistant = [], []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    for where, line in lines:
        role, content = line["role"], line.get("content")
        text = (
            content if isinstance(content, str) else "" if content is None else json.dumps(content)
        )
        rest = {k: v for k, v in line.items() if k not in _KNOWN}
        if rest:
            extra.setdefault(str(role), {}).update(rest)
        if role == "user":
            user.append(text)
        elif role == "assistant":
            assistant.append(text)
        elif role == "tool_call":
            calls.append(
                {"name": str(line.get("tool") or "unknown"), "arguments": line.get("args", {})}
            )
        elif role == "tool_result":
            result: dict[str, Any] = {"content": text, "success": line.get("success") is not False}
            if line.get("tool"):
                result["name"] = str(line["tool"])
            if line.get("source") is not None:
                result["source"] = line["source"]
            results.append(result)
        else:
            extra.setdefault("other", []).append({"ref": where, "line": dict(line)})
    first = lines[0][1]
    meta: dict[str, Any] = {"qracer": {"turn": json.loads(number), "file": rel}}
    if extra:
        meta["qracer"]["fields"] = extra
    refs = (
        f"{lines[0][0]}" if len(lines) == 1 else f"{lines[0][0]}-{lines[-1][0].rsplit(':', 1)[-1]}"
    )
    return TurnRecord(
        ref=refs,
        session=session,
        key=stable_key("qracer", rel, number),
        user="\n".join(user),
        assistant="\n".join(assistant),
        tool_calls=calls,
        tool_results=results,
        meta=meta,
        at=time_of(first.get("ts")),
    )
