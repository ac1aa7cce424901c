"""The layers of ``Memory`` (issue 7), each a part on the facade:
``memory.core``, ``memory.working``, ``memory.semantic``, ``memory.notes``, on
top of ``stores`` (the files, read and written only through the workspace's
volume) and ``Engine`` (lock and events).

* Every write runs under the workspace lock (two read-modify-write calls never
  interleave, across processes too) and tells the write hooks afterwards.
* Working memory is bounded by the ``working_max_chars`` setting; what a write
  pushes out (oldest progress first, then open threads) is not lost: it is
  appended to today's daily note under ``Left working memory``.
* Migrations run at open (lock held): a root ``CLAUDE.md`` becomes
  core/SOUL.md, then ``## Session Compaction`` sections of SOUL.md become
  long-term items (category = the section title) — journaled and fsynced
  before the sections are cut from SOUL.md, so a crash in between only
  repeats the (deduplicated) import. A SOUL.md that is not UTF-8 is left as
  it is and reported.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime

from ..errors import Corrupt
from ..migrations import layers as migrate
from ..model import Source, WriteEvent, normalize_category, now
from ..stores import core, daily, notebook, semantic, working
from ..stores.longterm import OP_PUT
from ..stores.notebook import Note
from ..stores.semantic import SemanticItem
from ..stores.text import item_text
from ..stores.working import Dropped, WorkingMemory
from .engine import Engine

__all__ = ["Core", "Notes", "Semantic", "Working", "migrate_at_open"]

_Write = Callable[[int], list[Dropped]]  # a working-memory writer, given the cap


class Core:
    """core/AGENT.md, USER.md, SOUL.md: read and replaced by name."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def read(self, name: str) -> str:
        """The text of core file ``name`` (agent, user, soul)."""
        self.engine.check_open()
        return core.read(self.engine.workspace, name)

    def write(self, name: str, text: str) -> str:
        """Replace core file ``name`` with ``text`` (redacted); returns what was written."""
        with self.engine.transaction("write the core file"):
            written = core.write(self.engine.workspace, name, text)
        where = core.rel(name)
        self.engine.events.notify(WriteEvent("layer", "put", written, Source.USER, where))
        return written


class Working:
    """working/WORKING_MEMORY.md: bounded sections of items."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def read(self) -> WorkingMemory:
        """WORKING_MEMORY.md as sections."""
        self.engine.check_open()
        return working.read(self.engine.workspace)

    def add(self, section: str, text: str) -> builtins.list[Dropped]:
        """Add an item to a working-memory section (priorities, active_tasks,
        open_threads, pending_checks, temporary_context; or its title, e.g.
        "pending checks"); returns what left to stay within the cap."""
        return self._write(
            lambda cap: working.add_item(self.engine.workspace, section, text, cap=cap), text
        )

    def set(self, section: str, items: Sequence[str]) -> builtins.list[Dropped]:
        """Make a working-memory section hold exactly ``items``."""
        return self._write(
            lambda cap: working.set_items(self.engine.workspace, section, items, cap=cap),
            "\n".join(items) if not isinstance(items, str) else items,
        )

    def progress(self, text: str, *, at: datetime | None = None) -> builtins.list[Dropped]:
        """Note progress in Recent progress (the oldest progress leaves first)."""
        return self._write(
            lambda cap: working.add_progress(self.engine.workspace, text, at=at, cap=cap), text
        )

    def _write(self, write: _Write, text: str) -> builtins.list[Dropped]:
        self.engine.check_open()
        events = []
        with self.engine.transaction("write working memory"):
            dropped = write(self.engine.settings.working_max_chars)
            events.append(WriteEvent("layer", "put", text, Source.USER, working.REL))
            if dropped:
                events.append(self._keep_dropped(dropped))
        self.engine.events.notify(*events)
        return dropped

    def _keep_dropped(self, dropped: Sequence[Dropped]) -> WriteEvent:
        """Items pushed out of working memory, kept in today's daily note (lock held)."""
        at = now()
        lines = [f"- ({item.section}) {item.text}" for item in dropped]
        return self.engine.append_note(daily.section(lines, at, "Left working memory"), None, at)


class Semantic:
    """semantic/facts.md, preferences.md, projects.md: bullet items."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def read(self, name: str) -> builtins.list[SemanticItem]:
        """The items of semantic file ``name`` (facts, preferences, projects)."""
        self.engine.check_open()
        return semantic.read(self.engine.workspace, name)

    def add(self, name: str, text: str) -> SemanticItem | None:
        """Append an item (None when an equal one is there already)."""
        with self.engine.transaction("write the semantic file"):
            added = semantic.add(self.engine.workspace, name, text)
        if added is not None:
            self.engine.events.notify(
                WriteEvent("layer", "put", added.text, Source.USER, semantic.rel(name))
            )
        return added

    def remove(self, name: str, item: str | int) -> builtins.list[SemanticItem]:
        """Remove items by exact text or line number; returns what was removed."""
        with self.engine.transaction("write the semantic file"):
            removed = semantic.remove(self.engine.workspace, name, item)
        where = semantic.rel(name)
        self.engine.events.notify(WriteEvent("layer", "delete", "", Source.USER, where))
        return removed


class Notes:
    """The notebook: notes/inbox, notes/zettel, notes/maps and their links."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, title: str, body: str = "", *, folder: str = "inbox") -> Note:
        """A new note (never overwrites: a taken name gets a suffix)."""
        with self.engine.transaction("write the note"):
            note = notebook.create(self.engine.workspace, title, body, folder=folder)
        self.engine.events.notify(self._note_event(note))
        return note

    def read(self, name: str) -> str:
        """The text of a note."""
        self.engine.check_open()
        return notebook.read(self.engine.workspace, name)

    def list(self, folder: str | None = None) -> builtins.list[Note]:
        """The notes of one folder (inbox, zettel, maps) or of all three."""
        self.engine.check_open()
        return notebook.list_notes(self.engine.workspace, folder)

    def link(self, source: str, target: str) -> bool:
        """Add a ``[[target]]`` link to note ``source`` (False: it was there)."""
        with self.engine.transaction("write the note"):
            added = notebook.link(self.engine.workspace, source, target)
        if added:
            self.engine.events.notify(
                self._note_event(notebook.find(self.engine.workspace, source))
            )
        return added

    def move(self, name: str, folder: str) -> Note:
        """Move a note to another folder (``zettel`` to keep an inbox note)."""
        with self.engine.transaction("move the note"):
            note = notebook.move(self.engine.workspace, name, folder)
        self.engine.events.notify(self._note_event(note))
        return note

    def backlinks(self, name: str) -> builtins.list[Note]:
        """The notes that link to note ``name``."""
        self.engine.check_open()
        return notebook.backlinks(self.engine.workspace, name)

    def _note_event(self, note: Note) -> WriteEvent:
        return WriteEvent("layer", "put", note.name, Source.USER, note.rel)


def migrate_at_open(engine: Engine) -> None:
    """Legacy CLAUDE.md and SOUL.md compaction sections taken in (lock held)."""
    try:
        for notice in migrate.migrate_claude_md(engine.workspace):
            engine.notice(f"migration: {notice}")
        sections = migrate.take_compaction_sections(engine.workspace, cut=False)
    except Corrupt as exc:
        engine.notice(f"migration skipped: {exc}")
        return
    if not sections:
        return
    at, items = now(), []
    for section in sections:
        category = normalize_category(section.title)
        for line in section.lines:
            text = line.strip().removeprefix("- ").removeprefix("* ").strip()
            if not text or text.startswith("#"):
                continue
            item = engine.live_or_new(item_text(text), category, Source.IMPORT, None, at)
            if not item.hits:
                items.append(item)
    if items:
        payload = {"items": [item.to_dict() for item in items], "reason": "migration"}
        engine.write(OP_PUT, payload, sync=True)
    migrate.take_compaction_sections(engine.workspace)
    engine.notice(
        f"migration: {len(sections)} Session Compaction section(s) moved from "
        f"core/SOUL.md to MEMORY.md ({len(items)} item(s))"
    )
