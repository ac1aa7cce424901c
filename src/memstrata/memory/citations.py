"""Where a search cites a fact: its line in MEMORY.md on disk (a part of
``Searcher``). The file's lines are read again only when its size or mtime
changed, and looked at once a search, not once a hit; the lines of the file
the engine last rendered come with it (``MemoryFile.lines``), not from
reading it again. A fact written since
the last checkpoint is on no line yet: MEMORY.md is then rendered
(``HandEdits.render_now``, once for all such facts, without the rest of a
checkpoint) so that it is cited at the line it has, not ``[0, 0]``."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..errors import MemstrataError
from ..index.chunks import Chunk, memory_md_lines
from ..model import decoded_text
from ..storage.volume import Stat
from .engine import Engine

__all__ = ["FactLines"]

log = logging.getLogger("memstrata")


class FactLines:
    """MEMORY.md's line of each fact (by ref), as last read."""

    def __init__(self) -> None:
        self._key: Stat | None = None
        self._lines: dict[str, int] = {}

    def lines_of(self, engine: Engine) -> Callable[[Chunk], tuple[int, int]]:
        """A chunk's lines, for one search (see the module)."""
        lines: dict[str, int] | None = None  # read at the first fact cited

        def line_of(chunk: Chunk) -> tuple[int, int]:
            nonlocal lines
            if chunk.path != "MEMORY.md" or chunk.ref is None:
                return chunk.line_start, chunk.line_end
            if lines is None:
                lines = self._read(engine)
            line = lines.get(chunk.ref, 0)
            if not line and _render(engine, chunk.ref):
                lines = self._read(engine)
                line = lines.get(chunk.ref, 0)
            return line, line

        return line_of

    def _read(self, engine: Engine) -> dict[str, int]:
        volume = engine.workspace.volume
        info = volume.stat("MEMORY.md")
        if info is None:
            return {}
        rendered = engine.memory_md.lines
        if self._key != info and rendered is not None and rendered[0].stat == info:
            self._key, self._lines = info, rendered[1]  # the file the engine last rendered
        if self._key != info:
            data = volume.read("MEMORY.md")
            if data is None:
                return {}
            self._lines = memory_md_lines(decoded_text(data))
            self._key = info
        return self._lines


def _render(engine: Engine, ref: str) -> bool:
    """Render MEMORY.md now for item ``ref`` that the store holds and the
    file does not yet (False: nothing to render, or it cannot be)."""
    if engine.read_only or ref not in engine.store.items:
        return False
    try:
        return engine.hand_edits.render_now()
    except MemstrataError as exc:  # a full disk, a lock: the citation stays [0, 0]
        log.debug("MEMORY.md not rendered for a citation: %s", exc)
        return False
