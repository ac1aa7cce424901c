"""The RAM mirror of the index file: every chunk, file state and vector, with
the maps search reads (by path, by ref, line order) and the change logs its
followers (``Lexical``, ``Vectors``) keep their place in.

* Changed only through the primitives below (``Index`` calls them while it
  writes the file, or takes in what other processes wrote): each appends to
  ``chunk_log`` / ``vector_log`` what it did, and notes the chunk ids and
  paths it changed, so that ``Index`` can read them back from the file after
  a transaction that rolled back (``_cleared``: all of it).
* ``unembedded`` is exactly the chunks without a vector.
* Emptying it (``_clear_mirror``) logs a clear (followers start over) and
  counts in ``resets``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .chunks import Chunk

__all__ = ["FileState", "Followed", "Mirror"]


@dataclass(frozen=True, slots=True)
class FileState:
    """What a file was when it was indexed."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(slots=True)
class Followed:
    """What taking in other writers' changes touched (``everything``: all loaded again)."""

    ids: set[int] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    everything: bool = False

    def touches(self, path: str) -> bool:
        return self.everything or path in self.paths

    @classmethod
    def of_log(cls, entries: Iterable[tuple[int | None, str | None]]) -> Followed:
        """The chunk ids and paths a change log's ``(chunk_id, path)`` entries name."""
        followed = cls()
        for chunk_id, path in entries:
            if chunk_id is not None:
                followed.ids.add(chunk_id)
            if path is not None:
                followed.paths.add(path)
        return followed


class Mirror:
    """Every chunk, file state and vector of one index, in RAM; a backend
    (``index.sqlite``, ``postgres.index``) reads rows and hands them here."""

    def __init__(self) -> None:
        self.chunks: dict[int, Chunk] = {}
        self.files: dict[str, FileState] = {}
        self.vectors: dict[int, bytes] = {}  # chunk id -> float32 bytes
        # Every change to ``vectors`` since open, in order: (+1 added | -1 removed
        # | 0 all cleared, chunk id). Readers keep their place in it (``Vectors``).
        self.vector_log: list[tuple[int, int]] = []
        # Every change to ``chunks`` since open, in order, the same way (``Lexical``).
        self.chunk_log: list[tuple[int, int]] = []
        self.unembedded: set[int] = set()  # chunk ids without a vector
        # What search has read from a chunk's text once (answer types, as bits);
        # dropped with the chunk.
        self.marks: dict[int, int] = {}
        self.vector_model: str | None = None
        self._by_path: dict[str, dict[int, None]] = {}  # path -> its chunk ids (a set)
        self._by_ref: dict[tuple[str, str], set[int]] = {}  # (path, ref) -> chunk ids
        # path -> its chunk ids in line order, and each one's place there (a cache)
        self._order: dict[str, tuple[list[int], dict[int, int]]] = {}
        self._near: dict[int, list[int]] = {}  # neighbours(cid, 1), until a chunk changes
        self.resets = 0  # times the mirror was emptied or loaded again
        self._touched: set[int] = set()  # chunk ids changed in the transaction
        self._touched_paths: set[str] = set()  # and paths of ``files``
        self._cleared = False  # and whether it was emptied

    # -- reads ---------------------------------------------------------------------

    def path_chunks(self, path: str) -> list[Chunk]:
        """The chunks of ``path``, in the order they were indexed."""
        return [self.chunks[cid] for cid in self._by_path.get(path, ())]

    def neighbours(self, cid: int, reach: int = 1) -> list[int]:
        """The chunks of the same file within ``reach`` places of ``cid`` in line
        order (the turns around a turn), without ``cid`` itself. Each search asks
        for its candidates' neighbours: those of reach 1 are kept until a chunk
        changes (the list is shared: read it only)."""
        if reach == 1 and (near := self._near.get(cid)) is not None:
            return near
        chunk = self.chunks.get(cid)
        if chunk is None:
            return []
        order = self._order.get(chunk.path)
        if order is None:
            ids = sorted(
                self._by_path[chunk.path], key=lambda key: (self.chunks[key].line_start, key)
            )
            order = self._order[chunk.path] = (ids, {key: n for n, key in enumerate(ids)})
        ids, places = order
        here = places[cid]
        start = here - reach if here > reach else 0
        found = ids[start:here] + ids[here + 1 : here + 1 + reach]
        if reach == 1:
            self._near[cid] = found
        return found

    # -- changes -------------------------------------------------------------------

    def _mapped(self, cid: int, chunk: Chunk) -> None:
        """Put a chunk in the RAM mirror and its path and ref maps."""
        self.chunks[cid] = chunk
        self.chunk_log.append((1, cid))
        self.marks.pop(cid, None)
        self._by_path.setdefault(chunk.path, {})[cid] = None
        if chunk.ref is not None:
            self._by_ref.setdefault((chunk.path, chunk.ref), set()).add(cid)
        self._order.pop(chunk.path, None)
        self._near.clear()
        self._touched.add(cid)

    def _unmapped(self, cid: int) -> None:
        """Take a chunk (and its vector) out of the RAM mirror and its maps."""
        chunk = self.chunks.pop(cid, None)
        self.chunk_log.append((-1, cid))
        self.marks.pop(cid, None)
        self.unembedded.discard(cid)
        if self.vectors.pop(cid, None) is not None:
            self.vector_log.append((-1, cid))
        if chunk is not None:
            self._by_path.get(chunk.path, {}).pop(cid, None)
            if chunk.ref is not None:
                self._by_ref.get((chunk.path, chunk.ref), set()).discard(cid)
            self._order.pop(chunk.path, None)
            self._near.clear()
        self._touched.add(cid)

    def _vector_set(self, cid: int, vec: bytes) -> None:
        old = self.vectors.get(cid)
        if old == vec:
            return
        if old is not None:
            self.vector_log.append((-1, cid))
        self.vectors[cid] = vec
        self.vector_log.append((1, cid))
        self.unembedded.discard(cid)
        self._touched.add(cid)

    def _vector_dropped(self, cid: int) -> None:
        if self.vectors.pop(cid, None) is not None:
            self.vector_log.append((-1, cid))
            self._touched.add(cid)
        if cid in self.chunks:
            self.unembedded.add(cid)

    def _file_state(self, path: str, state: FileState | None) -> None:
        if state is None:
            self.files.pop(path, None)
        else:
            self.files[path] = state
        self._touched_paths.add(path)

    def _load_rows(
        self,
        chunks: Iterable[tuple[int, Chunk]],
        files: Iterable[tuple[str, FileState]],
        vectors: Iterable[tuple[int, str, bytes]],
    ) -> None:
        """Fill the (empty) mirror with every row of the index."""
        for cid, chunk in chunks:
            self._mapped(cid, chunk)
        self.files.update(files)
        for cid, model, vec in vectors:
            self.vectors[cid] = vec
            self.vector_log.append((1, cid))
            self.vector_model = model
        self.unembedded = set(self.chunks) - set(self.vectors)

    def _take_rows(
        self,
        ids: Iterable[int],
        found: Mapping[int, Chunk],
        vectors: Mapping[int, tuple[str, bytes]],
        paths: Iterable[str],
        states: Mapping[str, FileState],
    ) -> set[str]:
        """Make the mirror hold, for these chunk ids and paths, the rows read
        back from the index (absent: gone); returns the paths of the chunks
        that changed."""
        moved: set[str] = set()
        for cid in ids:
            chunk, old = found.get(cid), self.chunks.get(cid)
            if chunk != old:  # added, removed, or its id used again
                moved.update(c.path for c in (chunk, old) if c is not None)
                self._unmapped(cid)
                if chunk is not None:
                    self._mapped(cid, chunk)
                    self.unembedded.add(cid)
            if cid in vectors:
                self.vector_model, vec = vectors[cid]
                self._vector_set(cid, vec)
            else:
                self._vector_dropped(cid)
        for path in paths:
            self._file_state(path, states.get(path))
        return moved

    def _drop_vectors(self) -> None:
        """Every vector goes (another model): each chunk is embedded again."""
        self.vectors.clear()
        self.vector_log.append((0, 0))
        self.unembedded = set(self.chunks)
        self._cleared = True

    def _clear_mirror(self) -> None:
        """Empty the RAM mirror; its followers (``Lexical``, ``Vectors``) start over."""
        self.chunks.clear()
        self.files.clear()
        self.vectors.clear()
        self.vector_log.append((0, 0))
        self.chunk_log.append((0, 0))
        self.marks.clear()
        self.unembedded.clear()
        self._by_path.clear()
        self._by_ref.clear()
        self._order.clear()
        self._near.clear()
        self.vector_model = None
        self.resets += 1
        self._cleared = True
