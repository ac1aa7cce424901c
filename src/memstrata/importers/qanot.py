"""``qanot``: a Qanot workspace.

* ``MEMORY.md``: a line ``- **cat**: [user:ID] detail`` is a fact of
  category ``cat`` said by user ``ID`` (both kept); any other line is a fact
  as in any MEMORY.md (``base.markdown_facts``);
* ``SESSION-STATE.md``: each WAL entry ``- [time] **cat**: text`` a fact of
  that category, at that time;
* ``memory/YYYY-MM-DD.md`` daily notes (and other ``memory/*.md``):
  documents of the same name; ``memory/working-buffer.md`` (the danger-zone
  log, rewritten at each compaction) is skipped with that reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .base import Document, Fact, Record, Skip, markdown_facts, read_text, time_of
from .markdown import document_path

__all__ = ["read"]

_ENTRY = re.compile(r"^\s*[-*]\s+(?:\[(?P<at>[^\]]+)\]\s+)?\*\*(?P<cat>[^*]+)\*\*:\s*(?P<rest>.*)$")
_USER = re.compile(r"^\[user:(?P<user>[^\]]+)\]\s*")


def read(source: Path) -> Iterator[Record]:
    """Every item of a Qanot workspace (see the module)."""
    for name in ("MEMORY.md", "SESSION-STATE.md"):
        path = source / name
        if not path.is_file():
            continue
        text = read_text(path)
        if text is None:
            yield Skip(name, "not UTF-8 text")
            continue
        yield from _entries(text, name)
    for path in sorted((source / "memory").glob("*.md")):
        rel = f"memory/{path.name}"
        text = read_text(path)
        if path.name == "working-buffer.md":
            yield Skip(rel, "the working buffer (a danger-zone log, not memory)")
        elif text is None:
            yield Skip(rel, "not UTF-8 text")
        else:
            yield Document(rel, document_path(rel), text)


def _entries(text: str, ref: str) -> Iterator[Record]:
    lines = text.split("\n")
    for record in markdown_facts(text, ref):
        if not isinstance(record, Fact):
            yield record
            continue
        number = int(record.ref.rsplit(":", 1)[1])
        match = _ENTRY.match(lines[number - 1])
        if match is None:
            yield record
            continue
        rest, user = match.group("rest"), None
        found = _USER.match(rest)
        if found:
            user, rest = found.group("user").strip(), rest[found.end() :]
        original = {"line": number, "category": match.group("cat").strip()}
        if match.group("at"):
            original["at"] = match.group("at")
        yield Fact(
            record.ref,
            rest,
            match.group("cat").strip(),
            user,
            at=time_of(match.group("at")),
            original=original,
        )
