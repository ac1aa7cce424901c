"""Legacy layouts taken in on open (NanoClaw, seed 001), in this order:

1. ``migrate_claude_md``: a ``CLAUDE.md`` at the workspace root becomes
   core/SOUL.md. Its text (redacted; bytes that are not UTF-8 replaced)
   replaces SOUL.md when SOUL.md is missing, empty or still the untouched
   template, else is appended under ``## Migrated from CLAUDE.md``. Then the
   file itself is moved, byte for byte, to ``.memstrata/migrated/CLAUDE.md``
   (``CLAUDE.1.md``... if that is taken), so nothing of it is lost.
2. ``take_compaction_sections``: every ``## Session Compaction ...`` section of
   SOUL.md (up to the next heading of level 1 or 2) is cut out of SOUL.md in
   one atomic write and returned, for the caller to put into MEMORY.md. The
   rest of SOUL.md is kept byte for byte; the sections' text is returned as it
   stood, except that recognised secrets are redacted.

Files are read and written only through the workspace's volume
(``storage.volume``). Both are idempotent: once done, a call changes nothing and returns nothing. A
crash inside ``migrate_claude_md`` (SOUL.md written, CLAUDE.md not yet moved)
is finished by the next call without adding the text twice; run step 2 only
after step 1 returned. Neither takes the workspace lock (hold it), and a
SOUL.md that is not valid UTF-8 raises ``Corrupt`` and is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from ..errors import StorageError
from ..storage.files import storage_errors
from ..storage.workspace import Workspace
from ..stores.text import headings, read_text_or_none, redacted, write_text

__all__ = ["MIGRATED_HEADING", "CompactionSection", "migrate_claude_md", "take_compaction_sections"]

MIGRATED_HEADING = "## Migrated from CLAUDE.md"
_COMPACTION = re.compile(r"session compaction\b", re.IGNORECASE)
_SOUL = "core/SOUL.md"
_LEGACY = "CLAUDE.md"
_MIGRATED = ".memstrata/migrated"


@dataclass(frozen=True, slots=True)
class CompactionSection:
    """A ``## Session Compaction ...`` section: its title and its whole text
    (heading line included, exactly as it stood but for redacted secrets)."""

    title: str
    text: str

    @property
    def body(self) -> str:
        """The text after the heading line."""
        return self.text.split("\n", 1)[1] if "\n" in self.text else ""

    @property
    def lines(self) -> list[str]:
        """The body's lines."""
        return self.body.splitlines()


def migrate_claude_md(workspace: Workspace) -> list[str]:
    """Take a root ``CLAUDE.md`` into core/SOUL.md (see the module); what was done."""
    with storage_errors("read CLAUDE.md"):
        data = workspace.volume.read(_LEGACY)
    if data is None:
        return []
    done: list[str] = []
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    if text.strip():
        done += _merge_into_soul(workspace, redacted(text))
    if not _is_utf8(data):
        done.append("CLAUDE.md was not valid UTF-8: its bad bytes were replaced in SOUL.md")
    stored = _keep_original(workspace, data)
    done.append(f"moved CLAUDE.md to {stored} (byte for byte)")
    return done


def take_compaction_sections(workspace: Workspace, *, cut: bool = True) -> list[CompactionSection]:
    """Cut the ``## Session Compaction`` sections out of SOUL.md; returns them in
    order. ``cut=False`` only reads them: a caller that must store them first
    (durably) cuts them in a second call."""
    text = read_text_or_none(workspace.volume, _SOUL, _SOUL)
    if text is None:
        return []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    spans = _compaction_spans(lines)
    if not spans:
        return []
    kept: list[str] = []
    sections: list[CompactionSection] = []
    position = 0
    for first, end, title in spans:
        begin, stop = starts[first], min(starts[end], len(text))
        kept.append(text[position:begin])
        sections.append(CompactionSection(title, redacted(text[begin:stop])))
        position = stop
    kept.append(text[position:])
    if cut:
        write_text(workspace.volume, _SOUL, "".join(kept), _SOUL)
    return sections


def _compaction_spans(lines: list[str]) -> list[tuple[int, int, str]]:
    """``(first line, end line, title)`` of each compaction section."""
    marks = [(index, level, title) for index, level, title in headings(lines) if level <= 2]
    spans = []
    for number, (index, level, title) in enumerate(marks):
        if level == 2 and _COMPACTION.match(title):
            end = marks[number + 1][0] if number + 1 < len(marks) else len(lines)
            spans.append((index, end, title))
    return spans


def _merge_into_soul(workspace: Workspace, text: str) -> list[str]:
    text = text if text.endswith("\n") else text + "\n"
    current = read_text_or_none(workspace.volume, _SOUL, _SOUL) or ""
    block = f"{MIGRATED_HEADING}\n\n{text}"
    if current == text or block in current:
        return []  # a crash after this write and before the move: the text is in already
    if not current.strip() or current == _template():
        write_text(workspace.volume, _SOUL, text, _SOUL)
        return ["core/SOUL.md: replaced the untouched template with the text of CLAUDE.md"]
    joined = current if current.endswith("\n") else current + "\n"
    write_text(workspace.volume, _SOUL, f"{joined}\n{block}", _SOUL)
    return [f"core/SOUL.md: appended the text of CLAUDE.md under '{MIGRATED_HEADING}'"]


def _keep_original(workspace: Workspace, data: bytes) -> str:
    """Move CLAUDE.md (which holds ``data``) into .memstrata/migrated/ under a
    free name, never overwriting; returns where it went."""
    volume = workspace.volume
    with storage_errors(f"move CLAUDE.md to {_MIGRATED}"):
        for number in range(10_000):
            target = f"{_MIGRATED}/" + ("CLAUDE.md" if number == 0 else f"CLAUDE.{number}.md")
            if volume.stat(target) is not None or not volume.create(target, data):
                continue
            volume.delete(_LEGACY)
            return target
    raise StorageError(f"cannot move CLAUDE.md: no free name left in {_MIGRATED}")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _template() -> str:
    return (resources.files("memstrata") / "templates" / "SOUL.md").read_text("utf-8")
