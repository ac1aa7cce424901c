"""Semantic memory: semantic/facts.md, preferences.md, projects.md, fetched on demand.

An item is a top-level bullet line (``- text``, ``* text``, ``+ text``) outside
fenced code blocks; everything else in the file (title, comments, a person's
own headings and paragraphs) is kept as written.

* ``read`` lists the items with their 1-based line numbers, in file order.
* ``add`` appends ``- text`` (one line, redacted) at the end of the file unless
  an item with the same ``normalize_text`` is there already.
* ``remove`` deletes item lines (by exact text or line number) and nothing
  else, except that blank lines left at the very end of the file are folded
  into one line break (adding then removing an item gives back a file that
  ended in one line break).
* Writes are atomic and durable; ``\\r\\n`` line breaks become ``\\n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import InvalidInput, NotFound
from ..model import normalize_text
from ..storage.workspace import Workspace
from .text import (
    bullet,
    headings,
    item_text,
    outside_fences,
    read_text,
    read_text_or_none,
    write_text,
)

__all__ = ["FILES", "SemanticItem", "add", "path", "read", "rel", "remove"]

FILES = {"facts": "facts.md", "preferences": "preferences.md", "projects": "projects.md"}


@dataclass(frozen=True, slots=True)
class SemanticItem:
    """One bullet of a semantic file: its line (1-based), its text, and the
    nearest ``##``-or-deeper heading above it (a person's own grouping), if any."""

    line: int
    text: str
    heading: str | None = None


def rel(name: str) -> str:
    """The volume path of semantic file ``name`` (``"facts"`` or ``"facts.md"``...)."""
    return f"semantic/{_file_name(name)}"


def path(workspace: Workspace, name: str) -> Path:
    """Where semantic file ``name`` lives in the workspace folder."""
    return workspace.path / rel(name)


def read(workspace: Workspace, name: str) -> list[SemanticItem]:
    """The items of semantic file ``name`` in file order (none if the file is missing)."""
    text = read_text_or_none(workspace.volume, rel(name), rel(name))
    return [] if text is None else _items(text.split("\n"))


def add(workspace: Workspace, name: str, text: str) -> SemanticItem | None:
    """Append ``text`` as the last item; None (and no write) if an equal item is there."""
    item = item_text(text)
    current = read_text_or_none(workspace.volume, rel(name), rel(name))
    if current is None:
        current = _template(name)
    lines = current.split("\n")
    key = normalize_text(item)
    if any(normalize_text(existing.text) == key for existing in _items(lines)):
        return None
    if current and not current.endswith("\n"):
        current += "\n"
    last = next((line for line in reversed(lines) if line.strip()), None)
    if last is not None and bullet(last) is None and not current.endswith("\n\n"):
        current += "\n"
    current += f"- {item}\n"
    write_text(workspace.volume, rel(name), current, rel(name))
    return _items(current.split("\n"))[-1]


def remove(workspace: Workspace, name: str, item: str | int) -> list[SemanticItem]:
    """Delete the items whose text is exactly ``item`` (str) or that sit on line ``item``
    (int); returns them. ``NotFound`` (and no write) when there is none."""
    lines = read_text(workspace.volume, rel(name), rel(name)).split("\n")
    items = _items(lines)
    if isinstance(item, bool) or not isinstance(item, (str, int)):
        raise InvalidInput(f"item must be its text or its line number, not {item!r}")
    if isinstance(item, str):
        gone = [found for found in items if found.text == item.strip()]
        missing = f"no item {item!r} in {rel(name)}"
    else:
        gone = [found for found in items if found.line == item]
        missing = f"line {item} of {rel(name)} is not an item"
    if not gone:
        raise NotFound(missing)
    drop = {found.line - 1 for found in gone}
    kept = "\n".join(line for index, line in enumerate(lines) if index not in drop)
    kept = kept.rstrip("\n") + "\n" if kept.strip() else ""
    write_text(workspace.volume, rel(name), kept, rel(name))
    return gone


def _items(lines: list[str]) -> list[SemanticItem]:
    titles = {index: title for index, level, title in headings(lines) if level >= 2}
    found: list[SemanticItem] = []
    heading: str | None = None
    for index in outside_fences(lines):
        heading = titles.get(index, heading)
        text = bullet(lines[index])
        if text is not None:
            found.append(SemanticItem(index + 1, text, heading))
    return found


def _file_name(name: str) -> str:
    if isinstance(name, str):
        key = name.strip().casefold().removesuffix(".md")
        if key in FILES:
            return FILES[key]
    allowed = ", ".join([*FILES, *FILES.values()])
    raise InvalidInput(f"semantic file must be one of {allowed}, not {name!r}")


def _template(name: str) -> str:
    return (resources.files("memstrata") / "templates" / _file_name(name)).read_text("utf-8")
