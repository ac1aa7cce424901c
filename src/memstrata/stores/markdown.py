"""MEMORY.md: the canonical, human-editable form of long-term memory.

Layout::

    # MEMORY.md -- Long-Term Memory

    <!-- memstrata: ... -->

    ## Preferences
    - I prefer dark mode ^m4k9x2q7a

    ## Superseded
    - ~~My name is Sarvar~~ (superseded 2025-01-15 10:31 UTC by m7d2kq0xe) ^m0c3v8n1r

One fact per list line; the ``^id`` at the end (an Obsidian-style block id)
is the item's stable id. The section heading is the category; superseded
items are struck through in the last section, with when they stopped being
valid and what replaced them (a note that parse ignores). Everything else (the title,
comments, blank lines, paragraphs) is ignored on parse, so a person can
annotate freely. ``parse(render(items))`` gives back every item's id, text,
category (live items) and live/superseded state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC

from ..model import (
    ARCHIVE_TITLE,
    CATEGORY_TITLES,
    DEFAULT_CATEGORY,
    ID_PATTERN,
    Item,
    category_title,
    normalize_category,
    plain_line,
)

__all__ = ["BadLine", "MemoryLine", "ParsedMemory", "parse", "render", "render_lines"]

TITLE = "# MEMORY.md -- Long-Term Memory"
TITLE_MARK = "# MEMORY.md"  # what a file must still start a line with to be a MEMORY.md
GUIDE = (
    "<!-- memstrata: one fact per line; the ^id at the end of a line is its stable id.\n"
    "     Edit, add (no id needed), move between sections or delete lines by hand:\n"
    "     memstrata takes the change in at its next checkpoint. Deleted facts stay\n"
    "     restorable: `memstrata forgotten`, `memstrata restore ID`. -->"
)
_ITEM = re.compile(r"^\s{0,3}[-*+]\s+(?P<body>.*?)\s*$")
_BLOCK_ID = re.compile(r"^(?P<text>.*?)\s+\^(?P<id>" + ID_PATTERN.pattern + r")$")
_HEADING = re.compile(r"^\s{0,3}(?P<marks>#{1,6})\s+(?P<title>.*?)\s*#*\s*$")
_STRIKE = "~~"
_ARCHIVE_NOTE = re.compile(r"(?<=~~)\s+\(superseded [^()]*\)$")


@dataclass(frozen=True, slots=True)
class MemoryLine:
    """One fact line as found in the file."""

    line_no: int
    text: str
    item_id: str | None
    category: str | None  # None for a line in the Superseded section
    archived: bool


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line whose bytes are not valid UTF-8 (kept for quarantine)."""

    line_no: int
    raw: bytes
    item_id: str | None


@dataclass(frozen=True, slots=True)
class ParsedMemory:
    """Everything ``parse`` found."""

    lines: list[MemoryLine]
    bad: list[BadLine]


def _order(items: Iterable[Item]) -> list[Item]:
    return sorted(items, key=lambda item: (item.created_at, item.id))


def render(items: Iterable[Item]) -> str:
    """The MEMORY.md text for ``items`` (deterministic for a given set)."""
    return render_lines(items)[0]


def render_lines(items: Iterable[Item], *, in_order: bool = False) -> tuple[str, dict[str, int]]:
    """``render``'s text and each item's 1-based line in it (where its ``^id``
    mark is: the line ``index.chunks.memory_md_lines`` finds), so that a search
    right after a checkpoint need not scan the file it just wrote.
    ``in_order``: ``items`` come in (created_at, id) order already (not sorted
    again: a third of the time at 100k facts)."""
    order = (lambda kept: kept) if in_order else _order
    live: dict[str, list[Item]] = {}
    archived: list[Item] = []
    for item in items:
        if item.is_live:
            live.setdefault(item.category, []).append(item)
        else:
            archived.append(item)
    known = [key for key in CATEGORY_TITLES if key in live]
    custom = sorted(key for key in live if key not in CATEGORY_TITLES)
    out = [TITLE, "", GUIDE, ""]
    number = "\n".join(out).count("\n") + 2  # the next line's
    lines: dict[str, int] = {}

    def section(title: str, entries: list[str], ordered: list[Item]) -> None:
        # an item's text is one line (``clean_text``), so each entry is one line
        nonlocal number
        out.extend([title, *entries, ""])
        ids = [item.id for item in ordered]
        lines.update(zip(ids, range(number + 1, number + 1 + len(ids)), strict=True))
        number += len(entries) + 2

    for key in known + custom:
        ordered = order(live[key])
        section(
            f"## {category_title(key)}", [f"- {item.text} ^{item.id}" for item in ordered], ordered
        )
    if archived:
        ordered = order(archived)
        entries = [
            f"- {_STRIKE}{item.text}{_STRIKE}{_archive_note(item)} ^{item.id}" for item in ordered
        ]
        section(f"## {ARCHIVE_TITLE}", entries, ordered)
    return "\n".join(out), lines


def parse(data: bytes) -> ParsedMemory:
    """Fact lines of a MEMORY.md file; undecodable lines are reported, not dropped."""
    lines: list[MemoryLine] = []
    bad: list[BadLine] = []
    category: str | None = DEFAULT_CATEGORY
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            found = _BLOCK_ID.match(raw.decode("utf-8", "replace").strip())
            bad.append(BadLine(number, raw, found.group("id") if found else None))
            continue
        heading = _HEADING.match(line)
        if heading:
            if len(heading.group("marks")) >= 2:
                category = _section(heading.group("title"))
            continue
        entry = _ITEM.match(line)
        if entry is None or not entry.group("body"):
            continue
        body = entry.group("body")
        found = _BLOCK_ID.match(body)
        item_id = found.group("id") if found else None
        # a hand-written control character is a space, as in remember()
        text = plain_line(found.group("text") if found else body)
        archived = category is None
        if archived:
            text = _ARCHIVE_NOTE.sub("", text)
        if archived and len(text) > 2 * len(_STRIKE) and text.startswith(_STRIKE):
            text = text.removeprefix(_STRIKE).removesuffix(_STRIKE)
        if text:
            lines.append(MemoryLine(number, text, item_id, category, archived))
    return ParsedMemory(lines, bad)


def _archive_note(item: Item) -> str:
    if item.valid_to is None:
        return ""
    when = item.valid_to.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    replaced = f" by {item.superseded_by}" if item.superseded_by else ""
    return f" (superseded {when}{replaced})"


def _section(title: str) -> str | None:
    if title.casefold() in (ARCHIVE_TITLE.casefold(), "archive"):
        return None
    try:
        return normalize_category(title)
    except ValueError:
        return DEFAULT_CATEGORY
