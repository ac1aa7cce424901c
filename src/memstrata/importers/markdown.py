"""``openclaw`` / ``markdown``: a folder of markdown memory.

OpenClaw's layout (``MEMORY.md`` + ``memory/*.md``), Claude Code's
``CLAUDE.md`` files and an Anthropic memory-tool ``/memories`` directory:

* ``MEMORY.md`` (or ``memory.md``) at the top: one fact per line
  (``base.markdown_facts``: a ``## section`` is the category), each with its
  ``MEMORY.md:line`` as its reference;
* every other text file becomes a document ``memory/<name>.md`` holding its
  text line for line, so a ``file:line`` citation still finds its line:
  ``memory/2025-01-15.md`` keeps its name, ``CLAUDE.md`` becomes
  ``memory/CLAUDE.md``, ``projects/acme.md`` becomes ``memory/projects-acme.md``;
* a file that is not UTF-8 text is skipped with the reason; hidden files and
  folders (but ``.claude/``) are not read.

SOURCE may also be one file (a ``MEMORY.md`` or any markdown file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .base import Document, Record, Skip, doc_name, markdown_facts, read_text

__all__ = ["read_markdown", "read_tree"]

_FACT_FILES = ("MEMORY.md", "memory.md")
_TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".xml", ".json", ".yaml", ".yml", ""}


def read_markdown(source: Path) -> Iterator[Record]:
    """Facts and documents from a markdown folder or file (see the module)."""
    if source.is_file():
        yield from _file(source, source.name, source.name in _FACT_FILES, None)
        return
    yield from read_tree(source, None)


def read_tree(root: Path, group: str | None, *, exclude: tuple[str, ...] = ()) -> Iterator[Record]:
    """Every file under ``root`` but those under ``exclude`` (relative folders)."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or _hidden(rel) or rel.startswith(exclude):
            continue
        yield from _file(path, rel, rel in _FACT_FILES, group)


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") and part != ".claude" for part in rel.split("/"))


def _file(path: Path, rel: str, facts: bool, group: str | None) -> Iterator[Record]:
    if path.suffix.lower() not in _TEXT_SUFFIXES:
        yield Skip(rel, "not a text file", group)
        return
    text = read_text(path)
    if text is None:
        yield Skip(rel, "not UTF-8 text", group)
        return
    if facts:
        yield from markdown_facts(text, rel, group)
        return
    yield Document(rel, document_path(rel), text, group)


def document_path(rel: str) -> str:
    """Where a source file goes: ``memory/<name>.md`` (see the module)."""
    name = rel[len("memory/") :] if rel.startswith("memory/") else rel
    name = name.removeprefix(".claude/")
    if name.endswith(".md"):
        name = name[:-3]
    return f"memory/{doc_name(name.replace('/', '-'))}.md"
