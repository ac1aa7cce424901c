"""The index file: SQLite with the chunks, FTS5 over their text, vectors as
float32 blobs, and a RAM mirror of every chunk and vector for scoring, fusion
and filtering (``Lexical`` and ``Vectors`` follow its change logs).

* **Derived.** Everything here is rebuilt from the workspace's files: deleting
  ``index.sqlite`` loses nothing (``Index.drop`` does it on purpose).
* **Migrations** are named and ordered (``MIGRATIONS``); each runs once, in a
  transaction, and is recorded in ``migrations``. A file whose recorded
  migrations are not a prefix of this code's (a newer memstrata wrote it) is
  rebuilt rather than guessed at.
* **One transaction per file.** The chunks of a file are replaced (or, for an
  append-only file, extended) atomically with its fingerprint, so after a
  crash a file is either indexed as it was or as it is.
* Reads of the RAM mirror take no lock; writers hold ``Index.lock``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import parse_time
from .chunks import Chunk

__all__ = ["MIGRATIONS", "FileState", "Index"]

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_chunks",
        """
        CREATE TABLE files (
            path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
            sha256 TEXT NOT NULL, indexed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY, path TEXT NOT NULL, layer TEXT NOT NULL,
            line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, text TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '', session TEXT, created_at TEXT,
            source TEXT NOT NULL, ref TEXT, live INTEGER NOT NULL DEFAULT 1
        );
        CREATE INDEX chunks_by_path ON chunks (path);
        CREATE INDEX chunks_by_ref ON chunks (ref);
        """,
    ),
    (
        "0002_fts5",
        """
        CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            body, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        """,
    ),
    (
        "0003_vectors",
        """
        CREATE TABLE vectors (
            chunk_id INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
            model TEXT NOT NULL, vec BLOB NOT NULL
        );
        """,
    ),
    # English clitics split again (text.index_text): the FTS5 rows are written
    # anew from the chunks by ``_retokenize`` (no SQL can call index_text).
    ("0004_retokenize_clitics", "DELETE FROM chunks_fts"),
)
# Migrations after which every chunk's FTS5 row is written again from Python.
_RETOKENIZE = frozenset({"0004_retokenize_clitics"})


@dataclass(frozen=True, slots=True)
class FileState:
    """What a file was when it was indexed."""

    size: int
    mtime_ns: int
    sha256: str


class Index:
    """One workspace's index file and its RAM mirror."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
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
        self.rebuilt = False  # the file was missing, unreadable or from a newer schema
        self._db = self._connect()

    # -- opening -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self._open_and_migrate()
        except (sqlite3.DatabaseError, _NewerSchema):
            self.path.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self.rebuilt = True
            db = self._open_and_migrate()
        self._load(db)
        return db

    def _open_and_migrate(self) -> sqlite3.Connection:
        fresh = not self.path.exists()
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute(
                "CREATE TABLE IF NOT EXISTS migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            done = [row[0] for row in db.execute("SELECT name FROM migrations ORDER BY name")]
            names = [name for name, _ in MIGRATIONS]
            if done != names[: len(done)]:
                raise _NewerSchema(f"index migrations {done} are not a prefix of {names}")
            for name, sql in MIGRATIONS[len(done) :]:
                db.execute("BEGIN")
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                if name in _RETOKENIZE:
                    _retokenize(db)
                db.execute("INSERT INTO migrations (name) VALUES (?)", (name,))
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        self.rebuilt = self.rebuilt or fresh
        return db

    def _load(self, db: sqlite3.Connection) -> None:
        for row in db.execute(
            "SELECT id, path, layer, line_start, line_end, text, title, session, created_at, "
            "source, ref, live FROM chunks"
        ):
            self._mapped(row[0], _chunk(row))
        for path, size, mtime_ns, sha in db.execute(
            "SELECT path, size, mtime_ns, sha256 FROM files"
        ):
            self.files[path] = FileState(size, mtime_ns, sha)
        for chunk_id, model, vec in db.execute("SELECT chunk_id, model, vec FROM vectors"):
            self.vectors[chunk_id] = vec
            self.vector_log.append((1, chunk_id))
            self.vector_model = model
        self.unembedded = set(self.chunks) - set(self.vectors)

    def close(self) -> None:
        with self.lock:
            self._db.close()

    # -- writes --------------------------------------------------------------------

    def replace(
        self, path: str, chunks: Sequence[Chunk], state: FileState | None, *, append: bool = False
    ) -> list[int]:
        """Make ``path``'s chunks ``chunks`` (``append``: add them to those it has)
        and record ``state`` (None: forget the file); returns the new chunk ids."""
        with self.lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                if not append:
                    self._delete(list(self._by_path.get(path, ())))
                ids = self._insert(chunks)
                if state is None:
                    db.execute("DELETE FROM files WHERE path = ?", (path,))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO files (path, size, mtime_ns, sha256) "
                        "VALUES (?, ?, ?, ?)",
                        (path, state.size, state.mtime_ns, state.sha256),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self._reload()
                raise
            if state is None:
                self.files.pop(path, None)
            else:
                self.files[path] = state
            return ids

    def replace_refs(self, path: str, refs: Iterable[str], chunks: Sequence[Chunk]) -> list[int]:
        """Replace the chunks of ``path`` whose ref is in ``refs`` by ``chunks``."""
        wanted = set(refs)
        with self.lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                old = [cid for ref in wanted for cid in self._by_ref.get((path, ref), ())]
                self._delete(old)
                ids = self._insert(chunks)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self._reload()
                raise
            return ids

    def set_vectors(self, model: str, vectors: dict[int, bytes]) -> None:
        """Store vectors of ``model`` for chunks (ids that are gone are skipped)."""
        with self.lock:
            rows = [(cid, model, vec) for cid, vec in vectors.items() if cid in self.chunks]
            if self.vector_model not in (None, model):
                self._db.execute("DELETE FROM vectors")
                self.vectors.clear()
                self.vector_log.append((0, 0))
                self.unembedded = set(self.chunks)
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (chunk_id, model, vec) VALUES (?, ?, ?)", rows
            )
            self._db.execute("COMMIT")
            for cid, _, vec in rows:
                self.vectors[cid] = vec
                self.vector_log.append((1, cid))
                self.unembedded.discard(cid)
            self.vector_model = model

    def drop(self) -> None:
        """Empty the index (files, chunks, vectors): the next sync rebuilds it."""
        with self.lock:
            self._db.execute("BEGIN IMMEDIATE")
            for table in ("vectors", "chunks_fts", "chunks", "files"):
                self._db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
            self._db.execute("COMMIT")
            self._clear_mirror()

    def _delete(self, ids: list[int]) -> None:
        db = self._db
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", part)  # noqa: S608
            db.execute(f"DELETE FROM vectors WHERE chunk_id IN ({marks})", part)  # noqa: S608
            db.execute(f"DELETE FROM chunks WHERE id IN ({marks})", part)  # noqa: S608
        for cid in ids:
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

    def _insert(self, chunks: Sequence[Chunk]) -> list[int]:
        from .text import index_text

        db = self._db
        ids = []
        for chunk in chunks:
            cursor = db.execute(
                "INSERT INTO chunks (path, layer, line_start, line_end, text, title, session, "
                "created_at, source, ref, live) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    chunk.path,
                    chunk.layer,
                    chunk.line_start,
                    chunk.line_end,
                    chunk.text,
                    chunk.title,
                    chunk.session,
                    chunk.created_at.isoformat() if chunk.created_at else None,
                    chunk.source,
                    chunk.ref,
                    int(chunk.live),
                ),
            )
            cid = cursor.lastrowid
            assert cid is not None
            db.execute(
                "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)", (cid, index_text(chunk.body))
            )
            self._mapped(cid, chunk)
            self.unembedded.add(cid)
            ids.append(cid)
        return ids

    def _mapped(self, cid: int, chunk: Chunk) -> None:
        """Put a chunk in the RAM mirror and its path and ref maps."""
        self.chunks[cid] = chunk
        self.chunk_log.append((1, cid))
        self.marks.pop(cid, None)
        self._by_path.setdefault(chunk.path, {})[cid] = None
        if chunk.ref is not None:
            self._by_ref.setdefault((chunk.path, chunk.ref), set()).add(cid)
        self._order.pop(chunk.path, None)

    def _reload(self) -> None:
        self._clear_mirror()
        self._load(self._db)

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
        self.vector_model = None

    # -- reads ---------------------------------------------------------------------

    def bm25(self, match: str, limit: int) -> list[tuple[int, float]]:
        """Chunk ids matching the FTS5 expression, best first, with a positive
        score (FTS5's bm25 is negative: lower is better)."""
        if not match:
            return []
        with self.lock:
            rows = self._db.execute(
                "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
                "ORDER BY bm25(chunks_fts) LIMIT ?",
                (match, limit),
            ).fetchall()
        return [(rowid, -score) for rowid, score in rows]

    def path_chunks(self, path: str) -> list[Chunk]:
        """The chunks of ``path``, in the order they were indexed."""
        return [self.chunks[cid] for cid in self._by_path.get(path, ())]

    def neighbours(self, cid: int, reach: int = 1) -> list[int]:
        """The chunks of the same file within ``reach`` places of ``cid`` in line
        order (the turns around a turn), without ``cid`` itself."""
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
        return [
            ids[n]
            for n in range(max(here - reach, 0), min(here + reach + 1, len(ids)))
            if n != here
        ]

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += Path(f"{self.path}{suffix}").stat().st_size
        return total


def _retokenize(db: sqlite3.Connection) -> None:
    """Write every chunk's FTS5 row again with today's ``index_text``."""
    from .text import index_text

    rows = db.execute(
        "SELECT id, path, layer, line_start, line_end, text, title, session, created_at, "
        "source, ref, live FROM chunks"
    ).fetchall()
    db.executemany(
        "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)",
        ((row[0], index_text(_chunk(row).body)) for row in rows),
    )


class _NewerSchema(Exception):
    pass


def _chunk(row: Sequence[Any]) -> Chunk:
    created = row[8]
    return Chunk(
        path=row[1],
        layer=row[2],
        line_start=row[3],
        line_end=row[4],
        text=row[5],
        title=row[6],
        session=row[7],
        created_at=parse_time(created) if created else None,
        source=row[9],
        ref=row[10],
        live=bool(row[11]),
    )
