"""The ``Index`` seam: what search needs from a backend that holds the chunks
of a workspace's files, their vectors, and what each file was when indexed.

``index.sqlite.Index`` (one SQLite file and a RAM mirror) is the embedded
implementation; ``tests/fakes.py`` has a plain-dict one, and
``tests/contracts/test_index_contract.py`` is what any backend must pass.
Values crossing the seam are frozen dataclasses: ``Chunk``, ``FileState``,
``IndexStatus`` (and ``hybrid.Hit`` out of the search over it).

What a backend must guarantee:

* **Derived.** It holds nothing the workspace's files do not: ``drop`` may
  empty it at any time and the next sync fills it again. A backend that finds
  its storage damaged empties itself and raises a ``Corrupt`` (the caller
  syncs again); it never raises a driver's own exception (``sqlite3.*``,
  ``psycopg.*``): only ``memstrata.errors`` classes.
* **Chunk ids** are ints, unique among the chunks it holds; an id may be used
  again only after its chunk is gone. ``chunks``, ``files``, ``vectors`` and
  ``unembedded`` are read-only views for the caller: a backend changes them
  only inside its own writes.
* **Atomic writes.** ``replace`` changes a file's chunks together with its
  ``FileState`` (or forgets the file); ``replace_refs`` swaps the chunks of
  some refs; ``set_vectors`` stores vectors of one model (a new model drops
  every vector of the old one); ``drop`` empties everything. Each is all or
  nothing, and writes inside one ``transaction()`` commit together or not at
  all: after an exception (``KeyboardInterrupt`` too) the index shows what it
  held before the transaction and is usable at once.
* **Vectors.** ``unembedded`` is exactly the chunk ids without a vector;
  ``set_vectors`` skips ids that are gone (or were used again by another
  writer since the caller read them); a chunk's vector goes with it.
* **Followers.** ``chunk_log`` and ``vector_log`` list every change to
  ``chunks`` / ``vectors`` in order as ``(+1 added | -1 removed | 0 all
  cleared, chunk id)``; they only grow, so a follower (the RAM BM25
  ``lexical.Lexical``, the vector matrix ``hybrid.Vectors``) keeps its place
  by length. Followers read under ``lock``, which writers hold.
* **Several writers** (processes, or clients of a server): ``refresh`` takes
  in what others committed; an append (``replace(..., append=True)``) decided
  on a file another writer indexed since raises ``Stale`` (decide again).
  ``resets`` grows whenever the whole content was loaded again or emptied, so
  a caller knows to compare everything.
* ``marks`` is a cache search writes (what a chunk's text says, as bits); a
  backend only drops a chunk's entry when the chunk changes or goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import Conflict
from .chunks import Chunk
from .mirror import FileState

__all__ = ["Chunk", "FileState", "Index", "IndexStatus", "Stale"]


class Stale(Conflict):
    """An append was decided on what another process has changed since: decide again."""


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What an index holds and where (``location``: a path, or a server's name)."""

    location: str
    bytes: int
    chunks: int
    files: int
    vectors: int
    vector_model: str | None


@runtime_checkable
class Index(Protocol):
    """Chunks in, chunks and vectors out (see the module for the guarantees)."""

    # -- what search reads ------------------------------------------------------------

    @property
    def chunks(self) -> Mapping[int, Chunk]: ...

    @property
    def files(self) -> Mapping[str, FileState]: ...

    @property
    def vectors(self) -> Mapping[int, bytes]:
        """Chunk id -> its float32 vector's bytes (of ``vector_model``)."""
        ...

    @property
    def vector_model(self) -> str | None: ...

    @property
    def unembedded(self) -> AbstractSet[int]: ...

    @property
    def chunk_log(self) -> Sequence[tuple[int, int]]: ...

    @property
    def vector_log(self) -> Sequence[tuple[int, int]]: ...

    @property
    def marks(self) -> MutableMapping[int, int]: ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """Held by writers; followers read the logs and maps under it."""
        ...

    @property
    def resets(self) -> int: ...

    def path_chunks(self, path: str) -> list[Chunk]:
        """The chunks of ``path``, in the order they were indexed."""
        ...

    def neighbours(self, cid: int, reach: int = 1) -> list[int]:
        """The chunks of ``cid``'s file within ``reach`` places of it in line
        order (by ``line_start``, then id), without ``cid``."""
        ...

    def status(self) -> IndexStatus: ...

    # -- writes -----------------------------------------------------------------------

    def replace(
        self, path: str, chunks: Sequence[Chunk], state: FileState | None, *, append: bool = False
    ) -> list[int]:
        """Make ``path``'s chunks ``chunks`` (``append``: add them) and record
        ``state`` (None: forget the file); the new chunk ids, in order."""
        ...

    def replace_refs(self, path: str, refs: Iterable[str], chunks: Sequence[Chunk]) -> list[int]:
        """Replace the chunks of ``path`` whose ref is in ``refs`` by ``chunks``."""
        ...

    def set_vectors(self, model: str, vectors: Mapping[int, bytes]) -> None: ...

    def drop(self) -> None:
        """Empty the index: files, chunks, vectors."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Writes inside commit together or not at all (nested: join the outer)."""
        ...

    def refresh(self) -> None:
        """Take in what other writers committed."""
        ...

    def close(self) -> None: ...
