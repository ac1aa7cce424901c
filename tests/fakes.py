"""In-memory backends for the narrow Protocols: ``InMemoryIndex``
(``index.protocol.Index``), ``InMemoryFactStore`` (``stores.protocol.FactStore``)
and ``InMemoryVolume`` (``storage.volume.Volume``); and ``RecordingEmbedder``,
a deterministic ``Embedder`` that remembers what it was asked to embed.

Each is a real working implementation written from the Protocol's guarantees
alone (plain dicts; no SQLite, no files, no code shared with the embedded
backends beyond the values), so that the contract tests in ``tests/contracts/``
pass for a reason the Protocol states, not because two backends share a
helper. They are single-process: ``refresh`` has nothing to take in and an
append is never ``Stale``.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime

import numpy as np

from memstrata.errors import NotFound
from memstrata.index.chunks import Chunk
from memstrata.index.protocol import FileState, IndexStatus
from memstrata.model import Item, dedupe_key, new_item_id, now, parse_time_or_none
from memstrata.storage.journal import Record
from memstrata.storage.volume import Stat, Swapped, clean_prefix, clean_rel
from memstrata.stores.longterm import Forgotten

__all__ = ["InMemoryFactStore", "InMemoryIndex", "InMemoryVolume", "RecordingEmbedder"]


class RecordingEmbedder:
    """Texts to seeded random unit vectors (the text's SHA-256 is the seed),
    every text it was given kept in ``seen``. ``shift`` adds a direction all
    vectors share (every cosine positive, so no vector is dropped as unlike)."""

    def __init__(self, dim: int = 16, shift: float = 0.0, name: str = "recording") -> None:
        self.name, self.dim, self.shift = name, dim, shift
        self.seen: list[str] = []

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        row = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        row += np.float32(self.shift)
        return row / np.linalg.norm(row)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(text) for text in texts])


class InMemoryIndex:
    """An ``Index`` in plain dicts; a transaction restores a copy on error."""

    def __init__(self) -> None:
        self.chunks: dict[int, Chunk] = {}
        self.files: dict[str, FileState] = {}
        self.vectors: dict[int, bytes] = {}
        self.vector_model: str | None = None
        self.unembedded: set[int] = set()
        self.chunk_log: list[tuple[int, int]] = []
        self.vector_log: list[tuple[int, int]] = []
        self.marks: dict[int, int] = {}
        self.lock = threading.RLock()
        self.resets = 0
        self._next_id = 1
        self._depth = 0

    # -- reads ---------------------------------------------------------------------

    def path_chunks(self, path: str) -> list[Chunk]:
        return [chunk for _, chunk in sorted(self.chunks.items()) if chunk.path == path]

    def neighbours(self, cid: int, reach: int = 1) -> list[int]:
        chunk = self.chunks.get(cid)
        if chunk is None:
            return []
        ids = sorted(
            (key for key, other in self.chunks.items() if other.path == chunk.path),
            key=lambda key: (self.chunks[key].line_start, key),
        )
        here = ids.index(cid)
        window = range(max(here - reach, 0), min(here + reach + 1, len(ids)))
        return [ids[n] for n in window if n != here]

    def status(self) -> IndexStatus:
        size = sum(len(chunk.text) for chunk in self.chunks.values())
        size += sum(len(vec) for vec in self.vectors.values())
        return IndexStatus(
            "memory:",
            size,
            len(self.chunks),
            len(self.files),
            len(self.vectors),
            self.vector_model,
        )

    # -- writes --------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self.lock:
            if self._depth:
                yield
                return
            saved = self._copy()
            self._depth = 1
            try:
                yield
            except BaseException:
                self._restore(saved)
                raise
            finally:
                self._depth = 0

    def refresh(self) -> None:
        """One process holds it: there is nothing another wrote."""

    def close(self) -> None:
        """Nothing to let go of."""

    def replace(
        self, path: str, chunks: Sequence[Chunk], state: FileState | None, *, append: bool = False
    ) -> list[int]:
        with self.transaction():
            if not append:
                for cid in [cid for cid, chunk in self.chunks.items() if chunk.path == path]:
                    self._remove(cid)
            ids = [self._add(chunk) for chunk in chunks]
            if state is None:
                self.files.pop(path, None)
            else:
                self.files[path] = state
        return ids

    def replace_refs(self, path: str, refs: Iterable[str], chunks: Sequence[Chunk]) -> list[int]:
        wanted = set(refs)
        with self.transaction():
            for cid, chunk in list(self.chunks.items()):
                if chunk.path == path and chunk.ref in wanted:
                    self._remove(cid)
            return [self._add(chunk) for chunk in chunks]

    def set_vectors(self, model: str, vectors: Mapping[int, bytes]) -> None:
        with self.transaction():
            if self.vector_model not in (None, model):
                self.vectors.clear()
                self.vector_log.append((0, 0))
                self.unembedded = set(self.chunks)
            self.vector_model = model
            for cid, vec in vectors.items():
                if cid not in self.chunks:
                    continue
                if cid in self.vectors:
                    self.vector_log.append((-1, cid))
                self.vectors[cid] = vec
                self.vector_log.append((1, cid))
                self.unembedded.discard(cid)

    def drop(self) -> None:
        with self.transaction():
            self._clear()

    # -- internals -----------------------------------------------------------------

    def _add(self, chunk: Chunk) -> int:
        cid = self._next_id
        self._next_id += 1
        self.chunks[cid] = chunk
        self.unembedded.add(cid)
        self.chunk_log.append((1, cid))
        return cid

    def _remove(self, cid: int) -> None:
        del self.chunks[cid]
        self.chunk_log.append((-1, cid))
        self.unembedded.discard(cid)
        self.marks.pop(cid, None)
        if self.vectors.pop(cid, None) is not None:
            self.vector_log.append((-1, cid))

    def _clear(self) -> None:
        self.chunks.clear()
        self.files.clear()
        self.vectors.clear()
        self.unembedded.clear()
        self.marks.clear()
        self.vector_model = None
        self.chunk_log.append((0, 0))
        self.vector_log.append((0, 0))
        self.resets += 1

    def _copy(self) -> tuple[object, ...]:
        return (
            dict(self.chunks),
            dict(self.files),
            dict(self.vectors),
            self.vector_model,
            set(self.unembedded),
        )

    def _restore(self, saved: tuple[object, ...]) -> None:
        """Back to ``saved``; followers start over (the logs say: all cleared)."""
        chunks, files, vectors, model, unembedded = saved
        assert isinstance(chunks, dict) and isinstance(files, dict)
        assert isinstance(vectors, dict) and isinstance(unembedded, set)
        self.chunks, self.files, self.vectors = chunks, files, vectors
        self.vector_model = model if isinstance(model, str) else None
        self.unembedded = unembedded
        self.marks.clear()
        self.chunk_log.append((0, 0))
        self.vector_log.append((0, 0))


OP_PUT = "ltm.put"
OP_DELETE = "ltm.del"
RESTORABLE = frozenset({"forget", "hand_delete"})


class InMemoryFactStore:
    """A ``FactStore`` in plain dicts (lookups by scanning: no key index)."""

    def __init__(self) -> None:
        self.items: dict[str, Item] = {}
        self.forgotten: dict[str, Forgotten] = {}
        self.lsn = 0

    def apply(self, record: Record) -> None:
        if record.lsn <= self.lsn:
            return
        self.lsn = record.lsn
        if record.op == OP_PUT:
            for data in record.data["items"]:
                item = Item.from_dict(data)
                self.items[item.id] = item
                self.forgotten.pop(item.id, None)
        elif record.op == OP_DELETE:
            reason = str(record.data.get("reason", ""))
            at = parse_time_or_none(record.data.get("at")) or now()
            for item_id in record.data["ids"]:
                old = self.items.pop(item_id, None)
                if old is not None and reason in RESTORABLE:
                    self.forgotten[item_id] = Forgotten(old, at, reason)

    def reset(
        self,
        items: dict[str, Item],
        lsn: int,
        keys: dict[str, str] | None = None,
        forgotten: dict[str, Forgotten] | None = None,
    ) -> None:
        del keys  # a hint for an index of keys; this store has none
        self.items = dict(items)
        self.lsn = lsn
        self.forgotten = dict(forgotten or {})

    def live_by_key(self, key: str) -> Item | None:
        for item in self.items.values():
            if item.is_live and item.key == key:
                return item
        return None

    def find_live(self, text: str, user: str | None = None) -> Item | None:
        return self.live_by_key(dedupe_key(text, user))

    def newest(self, accept: Callable[[Item], bool], limit: int | None) -> list[Item]:
        found = sorted(
            (item for item in self.items.values() if accept(item)),
            key=lambda item: (item.created_at, item.id),
            reverse=True,
        )
        return found if limit is None else found[:limit]

    def expire_forgotten(self, before: datetime) -> None:
        self.forgotten = {k: v for k, v in self.forgotten.items() if v.at >= before}

    def unused_id(self) -> str:
        while True:
            candidate = new_item_id()
            if candidate not in self.items and candidate not in self.forgotten:
                return candidate


class InMemoryVolume:
    """A ``Volume`` in a dict of path to bytes; every change is a new version
    (its ``Stat.inode`` and ``mtime_ns`` are a counter), so a ``Stat`` names one
    version exactly. ``calls`` counts the operations (tests check what ran)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, Stat]] = {}
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self._version = 0

    @property
    def where(self) -> str:
        return "memory:"

    @property
    def local(self) -> None:
        return None

    def read(self, rel: str) -> bytes | None:
        found = self._get("read", rel)
        return None if found is None else found[0]

    def tail(self, rel: str, size: int) -> tuple[bytes, bool] | None:
        found = self._get("tail", rel)
        if found is None:
            return None
        data = found[0]
        return data[max(len(data) - max(size, 0), 0) :], len(data) <= max(size, 0)

    def stat(self, rel: str) -> Stat | None:
        found = self._get("stat", rel)
        return None if found is None else found[1]

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None:
        del durable  # nothing here outlives the process
        with self.lock:
            self._put("write", clean_rel(rel), bytes(data))

    def append(self, rel: str, data: bytes, *, header: bytes = b"") -> None:
        with self.lock:
            rel = clean_rel(rel)
            old = self.files[rel][0] if rel in self.files else b""
            if not old:
                data = header + data
            elif not old.endswith(b"\n"):
                data = b"\n" + data
            self._put("append", rel, old + data)

    def create(self, rel: str, data: bytes) -> bool:
        with self.lock:
            rel = clean_rel(rel)
            if rel in self.files:
                self._count("create")
                return False
            self._put("create", rel, bytes(data))
            return True

    def rename(self, src: str, dst: str) -> None:
        with self.lock:
            src, dst = clean_rel(src), clean_rel(dst)
            if src not in self.files:
                raise NotFound(f"no file {src!r} to rename")
            self._count("rename")
            self.files[dst] = self.files.pop(src)

    def delete(self, rel: str) -> bool:
        with self.lock:
            self._count("delete")
            return self.files.pop(clean_rel(rel), None) is not None

    def swap(self, rel: str, data: bytes, expect: Stat | None) -> Swapped:
        with self.lock:
            rel = clean_rel(rel)
            current = self.files[rel][1] if rel in self.files else None
            if current != expect:
                self._count("swap")
                return Swapped(False)
            self._put("swap", rel, bytes(data))
            return Swapped(True, None, self.files[rel][1])

    def list(self, prefix: str = "") -> list[tuple[str, Stat]]:
        with self.lock:
            self._count("list")
            clean_prefix(prefix)
            return sorted(
                (rel, st) for rel, (_, st) in self.files.items() if rel.startswith(prefix)
            )

    def _get(self, op: str, rel: str) -> tuple[bytes, Stat] | None:
        with self.lock:
            self._count(op)
            return self.files.get(clean_rel(rel))

    def _put(self, op: str, rel: str, data: bytes) -> None:
        self._count(op)
        self._version += 1
        self.files[rel] = (data, Stat(len(data), self._version, self._version))

    def _count(self, op: str) -> None:
        self.calls[op] = self.calls.get(op, 0) + 1
