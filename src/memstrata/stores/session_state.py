"""SESSION-STATE.md: the capture entries of one session, newest last (Qanot's WAL file).

Format (the seed's)::

    # SESSION-STATE.md -- Active Working Memory

    - [2025-01-15T10:30:00+00:00] **proper_noun**: My name is Sardor

Rules:

* an entry is one line; its text is shortened to ``MAX_ENTRY_CHARS``;
* the file is read and written through a ``Volume`` by relative path
  (``Workspace.session_state_rel``); appends are durable on return;
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

from ..storage.volume import Volume

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


def append_entries(volume: Volume, rel: str, entries: Sequence[StateEntry], max_chars: int) -> None:
    """Append ``entries`` to file ``rel`` of ``volume`` durably, trimming the
    oldest beyond ``max_chars`` bytes."""
    lines = "".join(entry.render() for entry in entries).encode()
    if not lines:
        return
    stat = volume.stat(rel)
    size = stat.size if stat is not None else 0
    if size + len(lines) + len(HEADER) <= max_chars:
        volume.append(rel, lines, header=HEADER.encode())
        return
    data = (volume.read(rel) or b"") if size else b""
    old = parse_state(data.decode("utf-8", errors="replace"))
    ordered = sorted(old, key=lambda entry: entry.at) + list(entries)
    kept: list[bytes] = []
    budget = max_chars - len(HEADER)
    for entry in reversed(ordered):
        line = entry.render().encode()
        if kept and len(line) > budget:
            break
        kept.append(line)
        budget -= len(line)
    volume.write(rel, HEADER.encode() + b"".join(reversed(kept)))
