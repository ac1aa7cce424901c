"""SESSION-STATE.md: the capture entries of one session, newest last (Qanot's WAL file).

Format (the seed's)::

    # SESSION-STATE.md -- Active Working Memory

    - [2025-01-15T10:30:00+00:00] **proper_noun**: My name is Sardor

Rules:

* an entry is one line; its text is shortened to ``MAX_ENTRY_CHARS``;
* appends are durable on return (fsync; the folder too for a new file);
* the file is bounded: when an append would take it past ``max_chars``
  bytes, the file is rewritten atomically with the newest entries that fit,
  so the oldest go first and the newest entry is always kept;
* a person may edit the file: any ``- `` line is an entry (one without a
  time counts as older than every timed one); other lines are kept until
  the file is next trimmed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..storage.files import append_durable, atomic_write

__all__ = ["HEADER", "MAX_ENTRY_CHARS", "StateEntry", "append_entries", "parse_state"]

HEADER = "# SESSION-STATE.md -- Active Working Memory\n\n"
MAX_ENTRY_CHARS = 500
_LINE = re.compile(r"- \[(?P<at>[^\]]+)\] \*\*(?P<category>[^*]+)\*\*: (?P<text>.*)")
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class StateEntry:
    """One line of SESSION-STATE.md."""

    at: datetime
    category: str
    text: str

    def render(self) -> str:
        text = " ".join(self.text.split())
        if len(text) > MAX_ENTRY_CHARS:
            text = text[: MAX_ENTRY_CHARS - 1].rstrip() + "…"
        return f"- [{self.at.isoformat(timespec='seconds')}] **{self.category}**: {text}\n"


def parse_state(data: str) -> list[StateEntry]:
    """The entries of a SESSION-STATE.md text, in file order."""
    entries = []
    for line in data.splitlines():
        if not line.startswith("- "):
            continue
        match = _LINE.fullmatch(line.rstrip())
        if match is None:
            entries.append(StateEntry(_OLDEST, "note", line[2:].strip()))
            continue
        try:
            at = datetime.fromisoformat(match["at"])
        except ValueError:
            at = _OLDEST
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        entries.append(StateEntry(at, match["category"].strip(), match["text"].strip()))
    return entries


def append_entries(path: Path, entries: Sequence[StateEntry], max_chars: int) -> None:
    """Append ``entries`` durably, trimming the oldest beyond ``max_chars`` bytes."""
    lines = "".join(entry.render() for entry in entries).encode()
    if not lines:
        return
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = 0
    if size + len(lines) + len(HEADER) <= max_chars:
        path.parent.mkdir(parents=True, exist_ok=True)
        append_durable(path, lines, header=HEADER.encode())
        return
    old = parse_state(path.read_text(encoding="utf-8", errors="replace")) if size else []
    ordered = sorted(old, key=lambda entry: entry.at) + list(entries)
    kept: list[bytes] = []
    budget = max_chars - len(HEADER)
    for entry in reversed(ordered):
        line = entry.render().encode()
        if kept and len(line) > budget:
            break
        kept.append(line)
        budget -= len(line)
    atomic_write(path, HEADER.encode() + b"".join(reversed(kept)))
