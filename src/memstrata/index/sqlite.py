"""The index file: SQLite with the chunks (BM25 over them is in RAM), vectors as
float32 blobs, and a RAM mirror of every chunk and vector for scoring, fusion
and filtering (``Lexical`` and ``Vectors`` follow its change logs).

* **Derived.** Everything here is rebuilt from the workspace's files: deleting
  ``index.sqlite`` loses nothing (``Index.drop`` does it on purpose). A file
  that is damaged or from a newer schema (``schema``) is replaced by an empty
  one, at open or when a statement finds it so (then ``IndexCorrupt`` tells
  the caller, whose next sync fills it); ``resets`` counts the times the
  mirror was emptied or loaded again.
* **One transaction per write** (``_transaction``): ``BEGIN IMMEDIATE``,
  ``COMMIT`` on success, ``ROLLBACK`` on any exception (``KeyboardInterrupt``
  too), after which what the mirror changed in it is read back from the file:
  the connection and the mirror are usable after any failure. The chunks of a
  file are replaced (or, for an append-only file, extended) atomically with
  its fingerprint, so after a crash a file is indexed as it was or as it is.
* **Several processes, one file.** The mirror follows the file's change log
  (``schema``) at the start of every transaction, under the write lock, so a
  write is decided on what the file holds, and at ``refresh``. What a caller
  took from the mirror before is checked there: ``set_vectors`` stores only
  vectors of chunks that still hold what the caller read (ids another process
  removed or used again are skipped), ``replace(append=True)`` raises
  ``Stale`` when another process indexed that file meanwhile. A file deleted
  or replaced under the connection is opened again.
* **Errors.** A lock another process holds is waited for ``BUSY_SECONDS``,
  then ``Conflict``; no ``sqlite3`` error leaves this module (``sqlerrors``).
* Reads of the RAM mirror take no lock; writers hold ``Index.lock``.
* It is an ``index.protocol.Index`` (and keeps that seam's guarantees).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from ..storage.files import storage_errors
from .chunks import Chunk
from .mirror import FileState, Followed, Mirror
from .protocol import IndexStatus, Stale
from .schema import (
    CHUNK_COLUMNS,
    MIGRATIONS,
    NewerSchema,
    chunk_values,
    last_change,
    migrate,
    row_chunk,
)
from .sqlerrors import BUSY_SECONDS, IndexCorrupt, mapped, while_busy

__all__ = ["MIGRATIONS", "FileState", "Index", "IndexCorrupt", "IndexStatus", "Stale"]

# Entries of the change log kept; a reader further behind loads everything again.
KEEP_CHANGES = 50_000
_PART = 500  # ids per ``IN (...)``
_Key = TypeVar("_Key", int, str)


class Index(Mirror):
    """One workspace's index file and its RAM mirror."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        super().__init__()
        self.path = path
        # A workspace that cannot be written: the index is a copy in RAM of the
        # file (when there is one), brought up to date there and never saved.
        self.read_only = read_only
        self.lock = threading.RLock()
        self.rebuilt = False  # the file was missing, unreadable or from a newer schema
        self._seen = 0  # seq of the last change of the file the mirror holds
        self._depth = 0  # transactions open (nested ones join the outer one)
        self._pruned = 0  # seq when this process last pruned the change log
        self._stale = False  # the mirror may differ from the file: load it again
        self._broken = False  # the connection failed to open again: retry
        self._file_id: tuple[int, int] | None = None  # (device, inode) opened
        self._db = self._connect()

    # -- opening -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """Open the file (created if missing) and load the mirror; a damaged file
        or a newer schema's is replaced by an empty one."""
        if self.read_only:
            return self._open_copy()
        with storage_errors("create the index folder"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        try:
            return while_busy(lambda: self._open(fresh), seconds=BUSY_SECONDS)
        except NewerSchema:
            pass
        except sqlite3.Error as exc:
            error = mapped(exc, self.path, "open the search index")
            if not isinstance(error, IndexCorrupt):
                raise error from exc
        self._discard()
        self.rebuilt = True
        try:
            return while_busy(lambda: self._open(True), seconds=BUSY_SECONDS)
        except NewerSchema as exc:  # a newer memstrata made it again meanwhile
            raise IndexCorrupt(f"the search index {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise mapped(exc, self.path, "create the search index") from exc

    def _open(self, fresh: bool) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            migrate(db)
            with storage_errors("read the search index"):
                info = self.path.stat()
            self._file_id = (info.st_dev, info.st_ino)
            self._clear_mirror()
            db.execute("BEGIN")  # one snapshot: the mirror and the log's place agree
            self._load(db)
            db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        self.rebuilt = self.rebuilt or fresh
        self._stale = self._broken = False
        return db

    def _open_copy(self) -> sqlite3.Connection:
        """A RAM copy of the file (empty when it is missing or unreadable)."""
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        if self.path.exists():
            uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
            try:
                with contextlib.closing(sqlite3.connect(uri, uri=True)) as source:
                    source.backup(db)
                migrate(db)
            except sqlite3.Error:  # damaged: start empty, as a writable index would
                db.close()
                db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.rebuilt = True
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db)
        self._clear_mirror()
        self._load(db)
        self._stale = self._broken = False
        return db

    def _discard(self) -> None:
        with storage_errors("remove the damaged search index"):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _same_file(self) -> bool:
        """Whether the path still names the file this connection has open."""
        if self.read_only:
            return True  # the copy in RAM is this process's own
        try:
            info = self.path.stat()
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._file_id

    def _reopen(self, *, discard: bool) -> None:
        """Open the file again (``discard``: replace it by an empty one first,
        unless another process already did)."""
        self._broken = True
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        if discard and self._same_file():
            self._discard()
            self.rebuilt = True
        self._db = self._connect()

    def _load(self, db: sqlite3.Connection) -> None:
        self._seen = last_change(db)
        chunks = db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks")  # noqa: S608
        files = db.execute("SELECT path, size, mtime_ns, sha256 FROM files")
        self._load_rows(
            ((row[0], row_chunk(row)) for row in chunks),
            ((path, FileState(size, mtime_ns, sha)) for path, size, mtime_ns, sha in files),
            db.execute("SELECT chunk_id, model, vec FROM vectors"),
        )

    def close(self) -> None:
        with self.lock, contextlib.suppress(sqlite3.Error):
            self._db.close()

    # -- transactions --------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the file's write lock with the mirror up to date: the writes made
        inside (``replace``, ``set_vectors``, ...) commit together or not at all,
        and no other process writes in between."""
        with self._transaction("write the search index"):
            yield

    def refresh(self) -> None:
        """Take in what other processes changed in the file since this one looked."""
        with self._transaction("read the search index", write=False):
            pass

    @contextlib.contextmanager
    def _transaction(self, doing: str, *, write: bool = True) -> Iterator[Followed]:
        """One transaction (see the module invariants); a nested one joins the
        outer one. Yields what following other processes touched."""
        with self.lock:
            if self._depth:
                yield Followed()
                return
            with self._errors(doing):
                self._check_file()
                db = self._db
                if db.in_transaction:  # a rollback was interrupted: finish it
                    db.execute("ROLLBACK")
                    self._stale = True
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                self._depth = 1
                self._touched, self._touched_paths, self._cleared = set(), set(), False
                try:
                    followed = self._follow()
                    # what others committed stands: a rollback undoes only what follows
                    self._touched, self._touched_paths, self._cleared = set(), set(), False
                    yield followed
                    seen = last_change(db)
                    if write and seen - self._pruned >= KEEP_CHANGES // 50:
                        db.execute("DELETE FROM changes WHERE seq <= ?", (seen - KEEP_CHANGES,))
                        self._pruned = seen
                    db.execute("COMMIT")
                    self._seen = seen
                except BaseException:
                    self._abort()
                    raise
                finally:
                    self._depth = 0

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Map SQLite's errors (``sqlerrors``); a damaged file is replaced by an
        empty one before ``IndexCorrupt`` is raised."""
        try:
            yield
        except sqlite3.Error as exc:
            error = mapped(exc, self.path, doing)
            if isinstance(error, IndexCorrupt):
                self._reopen(discard=True)
            raise error from exc

    def _check_file(self) -> None:
        """Open the file again if it was deleted or replaced under the connection
        (another process rebuilt it), or if opening it again failed last time."""
        if self._broken or not self._same_file():
            self._reopen(discard=False)

    def _abort(self) -> None:
        """Roll back, then read back from the file what the mirror changed in the
        transaction. Never raises: when it cannot finish, the mirror is marked
        stale and loaded again before its next use."""
        self._stale = True
        touched, paths, cleared = self._touched, self._touched_paths, self._cleared
        db = self._db
        try:
            if db.in_transaction:
                db.execute("ROLLBACK")
            db.execute("BEGIN")
            if cleared:
                self._reload()
            else:
                self._resync(touched, paths)
            db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")
            return
        self._stale = False

    def _follow(self) -> Followed:
        """Take in the changes other processes committed since ``_seen`` (inside a
        transaction); all of the file when the log no longer reaches back there."""
        db = self._db
        top = last_change(db)
        if not self._stale and top == self._seen:
            return Followed()
        first = db.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if self._stale or first is None or first > self._seen + 1:
            self._reload()
            return Followed(everything=True)
        followed = Followed.of_log(
            db.execute("SELECT chunk_id, path FROM changes WHERE seq > ?", (self._seen,))
        )
        followed.paths |= self._resync(followed.ids, followed.paths)
        self._seen = top
        return followed

    def _reload(self) -> None:
        self._clear_mirror()
        self._load(self._db)
        self._stale = False

    def _resync(self, ids: set[int], paths: set[str]) -> set[str]:
        """Make the mirror hold what the file holds for these chunk ids and file
        paths; returns the paths of the chunks that changed."""
        db = self._db
        found: dict[int, Chunk] = {}
        vectors: dict[int, tuple[str, bytes]] = {}
        for part in _parts(sorted(ids)):
            marks = ",".join("?" * len(part))
            for row in db.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})",  # noqa: S608
                part,
            ):
                found[row[0]] = row_chunk(row)
            for cid, model, vec in db.execute(
                f"SELECT chunk_id, model, vec FROM vectors WHERE chunk_id IN ({marks})",  # noqa: S608
                part,
            ):
                vectors[cid] = (model, vec)
        names = sorted(paths)
        states: dict[str, FileState] = {}
        for batch in _parts(names):
            marks = ",".join("?" * len(batch))
            for path, size, mtime_ns, sha in db.execute(
                f"SELECT path, size, mtime_ns, sha256 FROM files WHERE path IN ({marks})",  # noqa: S608
                batch,
            ):
                states[path] = FileState(size, mtime_ns, sha)
        return self._take_rows(ids, found, vectors, names, states)

    # -- writes --------------------------------------------------------------------

    def replace(
        self, path: str, chunks: Sequence[Chunk], state: FileState | None, *, append: bool = False
    ) -> list[int]:
        """Make ``path``'s chunks ``chunks`` (``append``: add them to those it has)
        and record ``state`` (None: forget the file); returns the new chunk ids.
        An append raises ``Stale`` when another process indexed ``path`` since
        the caller read ``files`` (it was decided on what is no longer there)."""
        with self._transaction(f"index {path}") as followed:
            if append and followed.touches(path):
                raise Stale(f"{path} was indexed by another process meanwhile")
            if not append:
                self._delete(list(self._by_path.get(path, ())))
            ids = self._insert(chunks)
            if state is None:
                self._db.execute("DELETE FROM files WHERE path = ?", (path,))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO files (path, size, mtime_ns, sha256) "
                    "VALUES (?, ?, ?, ?)",
                    (path, state.size, state.mtime_ns, state.sha256),
                )
            self._file_state(path, state)
        return ids

    def replace_refs(self, path: str, refs: Iterable[str], chunks: Sequence[Chunk]) -> list[int]:
        """Replace the chunks of ``path`` whose ref is in ``refs`` by ``chunks``."""
        wanted = set(refs)
        with self._transaction(f"index {path}"):
            old = [cid for ref in wanted for cid in self._by_ref.get((path, ref), ())]
            self._delete(old)
            ids = self._insert(chunks)
        return ids

    def set_vectors(self, model: str, vectors: Mapping[int, bytes]) -> None:
        """Store vectors of ``model`` for chunks; ids that are gone, or that another
        process used again since the caller read them, are skipped (they are
        embedded again later: they stay in ``unembedded``)."""
        with self._transaction("store vectors in the search index") as followed:
            if self.vector_model not in (None, model):
                self._db.execute("DELETE FROM vectors")
                self._drop_vectors()
            rows = [
                (cid, model, vec)
                for cid, vec in vectors.items()
                if cid in self.chunks and cid not in followed.ids and not followed.everything
            ]
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (chunk_id, model, vec) VALUES (?, ?, ?)", rows
            )
            for cid, _, vec in rows:
                self._vector_set(cid, vec)
            self.vector_model = model

    def drop(self) -> None:
        """Empty the index (files, chunks, vectors): the next sync rebuilds it."""
        with self._transaction("empty the search index"):
            for table in ("vectors", "chunks", "files", "changes"):
                self._db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
            # the log starts after a gap: every other process loads everything again
            self._db.execute("INSERT INTO changes (chunk_id, path) VALUES (NULL, NULL)")
            self._clear_mirror()

    def _delete(self, ids: list[int]) -> None:
        db = self._db
        for part in _parts(ids):
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM vectors WHERE chunk_id IN ({marks})", part)  # noqa: S608
            db.execute(f"DELETE FROM chunks WHERE id IN ({marks})", part)  # noqa: S608
        for cid in ids:
            self._unmapped(cid)

    def _insert(self, chunks: Sequence[Chunk]) -> list[int]:
        db = self._db
        ids = []
        for chunk in chunks:
            cursor = db.execute(
                "INSERT INTO chunks (path, layer, line_start, line_end, text, title, session, "
                "created_at, source, ref, live) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                chunk_values(chunk),
            )
            cid = cursor.lastrowid
            assert cid is not None
            self._mapped(cid, chunk)
            self.unembedded.add(cid)
            ids.append(cid)
        return ids

    # -- reads ---------------------------------------------------------------------

    def status(self) -> IndexStatus:
        return IndexStatus(
            str(self.path),
            self.size_bytes(),
            len(self.chunks),
            len(self.files),
            len(self.vectors),
            self.vector_model,
        )

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += Path(f"{self.path}{suffix}").stat().st_size
        return total


def _parts(keys: Sequence[_Key]) -> Iterator[list[_Key]]:
    """``keys`` in lists short enough for one ``IN (...)``."""
    for start in range(0, len(keys), _PART):
        yield list(keys[start : start + _PART])
