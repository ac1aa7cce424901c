"""The ``global`` group's memory as another group reads it (seed 001: a
group's context is loaded from the group *and* global memory).

* Its source is ``groups/global/MEMORY.md`` under the same root: the file a
  person reads there is what every other group sees (a group never opens
  global's journal or lock; global's own writes reach the file at its next
  flush, as for any reader of MEMORY.md).
* On a database (a tenant of PostgreSQL) the source is the ``global``
  tenant's MEMORY.md, read through the database by the tenant itself
  (``postgres.shared``: a read-only policy lets every tenant read that one
  file of ``global``, and nothing else of it); its ``stat`` is one row lookup,
  the file's ``inode`` (new at every write) its change marker. The same
  label (``groups/global/MEMORY.md``) on both backends.
* It is read again only when the file's ``stat`` changes; one ``stat`` per
  call otherwise. No file: no global memory (and nothing is created).
* The ``global`` group itself has none.
* Facts are ranked for a prompt by the same BM25 as the group's own facts
  (``context.ranking.FactRanker``), built once per change of the file. One
  object serves a Memory's search and context (the facade shares it), one
  thread at a time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from ..context.ranking import FactRanker
from ..index.hybrid import Hit
from ..model import Item, category_title, now
from ..storage.files import storage_errors
from ..storage.volume import DiskVolume, Stat
from ..storage.workspace import MEMORY_MD, Workspace
from ..stores import markdown
from ..stores.longterm import items_from_markdown

__all__ = ["GLOBAL", "GlobalFact", "GlobalMemory", "interleaved"]

GLOBAL = "global"
SOURCE = f"groups/{GLOBAL}/{MEMORY_MD}"


@dataclass(frozen=True, slots=True)
class GlobalFact:
    """One live fact of global memory, and its line in the file."""

    item: Item
    line_no: int

    @property
    def heading(self) -> str:
        return category_title(self.item.category)


class _Source(Protocol):
    """Where global's MEMORY.md is read: a folder, or the database."""

    def stat(self, rel: str) -> Stat | None: ...

    def read(self, rel: str) -> bytes | None: ...


def _source(workspace: Workspace) -> _Source | None:
    """Global's MEMORY.md as ``workspace``'s group reads it (None: it has none)."""
    if workspace.url is not None:
        from ..postgres.shared import global_file  # the driver only on a database

        return global_file(workspace.volume)
    here = workspace.path.resolve()
    folder = workspace.root / "groups" / GLOBAL
    if workspace.group == GLOBAL or folder.resolve() == here:
        return None
    return DiskVolume(folder)


class GlobalMemory:
    """The live facts of the ``global`` group next to ``workspace`` (see the module)."""

    def __init__(self, workspace: Workspace) -> None:
        self._volume = _source(workspace)
        self._stat: Stat | None = None
        self._facts: list[GlobalFact] = []
        self._ranker = FactRanker()
        self._generation = 0
        self._lock = threading.RLock()

    def facts(self) -> list[GlobalFact]:
        """Every live global fact, in the file's order (read again if it changed)."""
        with self._lock:
            return self._current()

    def _current(self) -> list[GlobalFact]:
        volume = self._volume
        if volume is None:
            return []
        with storage_errors(f"read {SOURCE}"):
            info = volume.stat(MEMORY_MD)
            if info == self._stat:
                return self._facts
            data = None if info is None else volume.read(MEMORY_MD)
        self._load(info, data)
        return self._facts

    def top(self, prompt: str, k: int, *, fresh: bool = True) -> list[GlobalFact]:
        """The ``k`` global facts that best match ``prompt``, best first;
        ``fresh=False``: of the facts as last read (no ``stat``: a caller that
        has just called ``facts``)."""
        with self._lock:
            by_id = {fact.item.id: fact for fact in (self._current() if fresh else self._facts)}
            if not by_id:
                return []
            ranked = self._ranker.top(prompt, k)
        return [by_id[item_id] for item_id in ranked if item_id in by_id]

    def hits(self, prompt: str, k: int) -> list[Hit]:
        """``top`` as search hits (layer and source ``global``, cited by its line)."""
        return [
            Hit(
                path=SOURCE,
                line_start=fact.line_no,
                line_end=fact.line_no,
                snippet=fact.item.text,
                score=1.0 / (rank + 1),
                layer=GLOBAL,
                session=None,
                created_at=fact.item.created_at,
                source=GLOBAL,
                ref=fact.item.id,
                text=fact.item.text,
            )
            for rank, fact in enumerate(self.top(prompt, k))
        ]

    def _load(self, info: Stat | None, data: bytes | None) -> None:
        parsed = markdown.parse(data or b"")
        items = items_from_markdown(parsed, at=now())
        line_of = {line.item_id: line.line_no for line in parsed.lines if line.item_id}
        self._facts = [
            GlobalFact(item, line_of.get(item.id, 0)) for item in items.values() if item.is_live
        ]
        self._generation += 1
        self._ranker.sync({f.item.id: f.item for f in self._facts}, self._generation, ())
        self._stat = info


def interleaved(own: list[Hit], shared: list[Hit]) -> list[Hit]:
    """The group's hits and global's, taken in turn (best of each first): their
    scores come from different rankings and are not compared."""
    out: list[Hit] = []
    for index in range(max(len(own), len(shared))):
        out.extend(hits[index] for hits in (own, shared) if index < len(hits))
    return out
