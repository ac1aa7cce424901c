"""The layer calls of ``Memory`` (issue 7): core, working, semantic and the
notebook, on top of ``layers`` (the files) and ``Engine`` (lock and hooks).

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
from ..storage.files import storage_errors
from ..storage.layers import POLICY, Policy
from ..stores import core, notebook, semantic, working
from ..stores import daily as notes
from ..stores.longterm import OP_PUT
from ..stores.notebook import Note
from ..stores.semantic import SemanticItem
from ..stores.text import item_text
from ..stores.working import Dropped, WorkingMemory
from .engine import Engine

__all__ = ["Layers"]

_Write = Callable[[int], list[Dropped]]  # a working-memory writer, given the cap


class Layers(Engine):
    """Core, working, semantic and notebook layers of the workspace."""

    @staticmethod
    def policy(layer: str) -> Policy:
        """How ``layer`` reaches the prompt (``layers.POLICY``)."""
        return POLICY[layer]

    # -- core ------------------------------------------------------------------

    def core(self, name: str) -> str:
        """The text of core file ``name`` (agent, user, soul)."""
        self._check_open()
        return core.read(self.workspace, name)

    def set_core(self, name: str, text: str) -> str:
        """Replace core file ``name`` with ``text`` (redacted); returns what was written."""
        self._check_open()
        with storage_errors("write the core file"), self._lock:
            written = core.write(self.workspace, name, text)
        where = core.path(self.workspace, name).relative_to(self.workspace.path).as_posix()
        self._notify(WriteEvent("layer", "put", written, Source.USER, where))
        return written

    # -- working ---------------------------------------------------------------

    def working(self) -> WorkingMemory:
        """WORKING_MEMORY.md as sections."""
        self._check_open()
        return working.read(self.workspace)

    def working_add(self, section: str, text: str) -> builtins.list[Dropped]:
        """Add an item to a working-memory section (priorities, active_tasks,
        open_threads); returns what left to stay within the cap."""
        return self._working_write(
            lambda cap: working.add_item(self.workspace, section, text, cap=cap), text
        )

    def working_set(self, section: str, items: Sequence[str]) -> builtins.list[Dropped]:
        """Make a working-memory section hold exactly ``items``."""
        return self._working_write(
            lambda cap: working.set_items(self.workspace, section, items, cap=cap),
            "\n".join(items) if not isinstance(items, str) else items,
        )

    def working_progress(self, text: str, *, at: datetime | None = None) -> builtins.list[Dropped]:
        """Note progress in Recent progress (the oldest progress leaves first)."""
        return self._working_write(
            lambda cap: working.add_progress(self.workspace, text, at=at, cap=cap), text
        )

    def _working_write(self, write: _Write, text: str) -> builtins.list[Dropped]:
        self._check_open()
        events = []
        with storage_errors("write working memory"), self._lock:
            dropped = write(self.settings.working_max_chars)
            where = working.path(self.workspace).relative_to(self.workspace.path).as_posix()
            events.append(WriteEvent("layer", "put", text, Source.USER, where))
            if dropped:
                events.append(self._keep_dropped(dropped))
        self._notify(*events)
        return dropped

    def _keep_dropped(self, dropped: Sequence[Dropped]) -> WriteEvent:
        """Items pushed out of working memory, kept in today's daily note (lock held)."""
        at = now()
        lines = [f"- ({item.section}) {item.text}" for item in dropped]
        return self._append_note(notes.section(lines, at, "Left working memory"), None, at)

    # -- semantic --------------------------------------------------------------

    def semantic(self, name: str) -> builtins.list[SemanticItem]:
        """The items of semantic file ``name`` (facts, preferences, projects)."""
        self._check_open()
        return semantic.read(self.workspace, name)

    def semantic_add(self, name: str, text: str) -> SemanticItem | None:
        """Append an item (None when an equal one is there already)."""
        self._check_open()
        with storage_errors("write the semantic file"), self._lock:
            added = semantic.add(self.workspace, name, text)
        if added is not None:
            where = semantic.path(self.workspace, name).relative_to(self.workspace.path)
            self._notify(WriteEvent("layer", "put", added.text, Source.USER, where.as_posix()))
        return added

    def semantic_remove(self, name: str, item: str | int) -> builtins.list[SemanticItem]:
        """Remove items by exact text or line number; returns what was removed."""
        self._check_open()
        with storage_errors("write the semantic file"), self._lock:
            removed = semantic.remove(self.workspace, name, item)
        where = semantic.path(self.workspace, name).relative_to(self.workspace.path).as_posix()
        self._notify(WriteEvent("layer", "delete", "", Source.USER, where))
        return removed

    # -- notebook --------------------------------------------------------------

    def note_create(self, title: str, body: str = "", *, folder: str = "inbox") -> Note:
        """A new note (never overwrites: a taken name gets a suffix)."""
        self._check_open()
        with storage_errors("write the note"), self._lock:
            note = notebook.create(self.workspace, title, body, folder=folder)
        self._notify(self._note_event(note))
        return note

    def note(self, name: str) -> str:
        """The text of a note."""
        self._check_open()
        return notebook.read(self.workspace, name)

    def notes(self, folder: str | None = None) -> builtins.list[Note]:
        """The notes of one folder (inbox, zettel, maps) or of all three."""
        self._check_open()
        return notebook.list_notes(self.workspace, folder)

    def note_link(self, source: str, target: str) -> bool:
        """Add a ``[[target]]`` link to note ``source`` (False: it was there)."""
        self._check_open()
        with storage_errors("write the note"), self._lock:
            added = notebook.link(self.workspace, source, target)
        if added:
            self._notify(self._note_event(notebook.find(self.workspace, source)))
        return added

    def note_move(self, name: str, folder: str) -> Note:
        """Move a note to another folder (``zettel`` to keep an inbox note)."""
        self._check_open()
        with storage_errors("move the note"), self._lock:
            note = notebook.move(self.workspace, name, folder)
        self._notify(self._note_event(note))
        return note

    def backlinks(self, name: str) -> builtins.list[Note]:
        """The notes that link to note ``name``."""
        self._check_open()
        return notebook.backlinks(self.workspace, name)

    def _note_event(self, note: Note) -> WriteEvent:
        where = note.path.relative_to(self.workspace.path).as_posix()
        return WriteEvent("layer", "put", note.name, Source.USER, where)

    # -- migrations at open ----------------------------------------------------

    def _migrate_layers(self) -> None:
        """Legacy CLAUDE.md and SOUL.md compaction sections taken in (lock held)."""
        try:
            for notice in migrate.migrate_claude_md(self.workspace):
                self._notice(f"migration: {notice}")
            sections = migrate.take_compaction_sections(self.workspace, cut=False)
        except Corrupt as exc:
            self._notice(f"migration skipped: {exc}")
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
                item = self._live_or_new(item_text(text), category, Source.IMPORT, None, at)
                if not item.hits:
                    items.append(item)
        if items:
            payload = {"items": [item.to_dict() for item in items], "reason": "migration"}
            self._write(OP_PUT, payload, sync=True)
        migrate.take_compaction_sections(self.workspace)
        self._notice(
            f"migration: {len(sections)} Session Compaction section(s) moved from "
            f"core/SOUL.md to MEMORY.md ({len(items)} item(s))"
        )
