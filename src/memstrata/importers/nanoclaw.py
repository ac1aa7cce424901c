"""``nanoclaw``: a NanoClaw root (the main group's folder, ``groups/<folder>/``).

For the main folder (into the target group) and each ``groups/<folder>/``
(into group ``<folder>``; ``groups/global/`` into ``global``):

* ``MEMORY.md`` (or ``memory.md``): one fact per line;
* ``memory/*.md``: documents ``memory/<name>.md``;
* ``SOUL.md`` becomes ``core/SOUL.md``; its ``## Session Compaction ...``
  sections are moved out as NanoClaw's startup migration does: each of
  their lines a fact of category ``compaction`` (as in MEMORY.md);
* the legacy ``CLAUDE.md`` is migrated the same way when there is no
  ``SOUL.md``; next to a ``SOUL.md`` it is skipped with that reason;
* any other top-level ``*.md`` file is skipped with the reason; a folder
  under ``groups/`` whose name is not a group name is skipped whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..storage.workspace import GROUP_NAME
from .base import Document, Fact, Record, Skip, markdown_facts, read_text, time_of
from .markdown import document_path

__all__ = ["read"]

_COMPACTION = re.compile(r"^##\s+Session Compaction\b(?P<rest>.*)$", re.IGNORECASE)
_HEADING2 = re.compile(r"^#{1,2}\s")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?")


def read(source: Path) -> Iterator[Record]:
    """Every item of a NanoClaw root (see the module)."""
    yield from _folder(source, "", None)
    groups = source / "groups"
    if groups.is_dir():
        for folder in sorted(p for p in groups.iterdir() if p.is_dir()):
            prefix = f"groups/{folder.name}/"
            if GROUP_NAME.fullmatch(folder.name) is None:
                yield Skip(prefix, "not a group name memstrata takes (a-z, 0-9, _ and -)")
                continue
            yield from _folder(folder, prefix, folder.name)


def _folder(root: Path, prefix: str, group: str | None) -> Iterator[Record]:
    names = {path.name: path for path in root.glob("*.md") if path.is_file()}
    for name in ("MEMORY.md", "memory.md"):
        if name in names:
            text = read_text(names.pop(name))
            if text is None:
                yield Skip(prefix + name, "not UTF-8 text", group)
            else:
                yield from markdown_facts(text, prefix + name, group)
    soul = names.pop("SOUL.md", None)
    claude = names.pop("CLAUDE.md", None)
    if soul is not None and claude is not None:
        yield Skip(prefix + "CLAUDE.md", "legacy: SOUL.md is there (NanoClaw migrated it)", group)
    identity = soul or claude
    if identity is not None:
        yield from _soul(identity, prefix, group)
    for name in sorted(names):
        yield Skip(prefix + name, "not a NanoClaw memory file", group)
    for path in sorted((root / "memory").glob("*.md")):
        rel = f"memory/{path.name}"
        text = read_text(path)
        if text is None:
            yield Skip(prefix + rel, "not UTF-8 text", group)
        else:
            yield Document(prefix + rel, document_path(rel), text, group)


def _soul(path: Path, prefix: str, group: str | None) -> Iterator[Record]:
    ref = prefix + path.name
    text = read_text(path)
    if text is None:
        yield Skip(ref, "not UTF-8 text", group)
        return
    kept: list[str] = []
    section: str | None = None  # the heading of the compaction section being moved
    for number, line in enumerate(text.split("\n"), 1):
        heading = _COMPACTION.match(line.strip())
        if heading:
            section = heading.group("rest")
            continue
        if section is not None and _HEADING2.match(line):
            section = None
        if section is None:
            kept.append(line)
            continue
        for record in markdown_facts(line, f"{ref}:{number}", group):
            if isinstance(record, Fact):
                stamp = _STAMP.search(section)
                at = time_of(stamp.group(0).replace(" ", "T")) if stamp else None
                yield Fact(
                    f"{ref}:{number}",
                    record.text,
                    "compaction",
                    at=at,
                    original={"line": number, "section": f"Session Compaction{section}"},
                    group=group,
                )
            else:
                yield record
    yield Document(ref, "core/SOUL.md", "\n".join(kept), group)
