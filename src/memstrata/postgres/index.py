"""``PostgresIndex``: one tenant's search index in PostgreSQL, an
``index.protocol.Index``, with the RAM mirror search reads (``index.mirror``).

Tables (``schema``, each under the tenant policy): ``memstrata_files`` (what
each file was when indexed), ``memstrata_chunks`` (with a ``tsvector``, GIN),
``memstrata_vectors`` (the float32 bytes exactly as given, and a
``vector(384)`` with an HNSW cosine index when the vector has 384
dimensions), ``memstrata_changes`` (the change log its triggers write) and
``memstrata_index_state`` (the log's floor).

* **Derived.** Everything here is rebuilt from the workspace's files;
  ``drop`` empties the tenant's rows on purpose. Reads of every table go
  through row-level security only (no ``WHERE tenant``): what the mirror
  holds is what the policy lets this tenant see.
* **One transaction per write** (``_transaction``), nested ones joining the
  outer one: it takes the tenant's advisory lock (writers of one tenant are
  serialized, so the change log's ``seq`` order is its commit order), takes
  in what other writers committed, then writes; on any exception
  (``KeyboardInterrupt`` too) PostgreSQL rolls back and what the mirror
  changed in it is read back from the database (``_abort``): the mirror and
  the handle are usable after any failure.
* **Several writers** (processes, machines): the mirror follows the tenant's
  change log at the start of every transaction and at ``refresh`` (one
  snapshot, REPEATABLE READ). ``set_vectors`` stores only vectors of chunks
  that still hold what the caller read; ``replace(append=True)`` raises
  ``Stale`` when another writer indexed that file meanwhile. A reader whose
  place in the log is below the floor (pruned, or emptied by ``drop``) loads
  everything again (``resets`` grows).
* **Errors.** No driver exception leaves it: ``connect.errors`` maps them.
* Reads of the RAM mirror take no lock; writers hold ``PostgresIndex.lock``.
* **Search candidates** (``search``): ``"mirror"`` leaves both lists to the
  RAM followers (BM25 and the vector matrix, as with SQLite); ``"sql"`` finds
  both in SQL (``candidates``: ``tsv`` and ``ts_rank_cd``, HNSW);
  ``"hnsw"`` the vector list only (BM25 stays in RAM). Vectors come from
  SQL only for a tenant with more than ``ann_above`` of them (below, the RAM
  matrix is exact and as fast) and ``ann_share`` of every tenant's; a
  vector list from SQL that comes out short (a filter left fewer than asked
  within ``hnsw.max_scan_tuples``, or the tenant holds fewer) is left to the
  RAM matrix, which is exact.
  ``docs/postgres.md`` has the measurements behind ``DEFAULT_SEARCH``,
  ``DEFAULT_EF_SEARCH`` and ``ANN_ABOVE``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..index.chunks import Chunk
from ..index.hybrid import Filters
from ..index.mirror import FileState, Followed, Mirror
from ..index.protocol import IndexStatus, Stale
from ..index.schema import CHUNK_COLUMNS, chunk_values, row_chunk
from . import candidates
from .connect import Database, check_tenant
from .schema import VECTOR_DIM

if TYPE_CHECKING:
    import numpy as np

    from ..index.hybrid import Ranked
    from .connect import Connection

__all__ = ["PostgresIndex"]

# Entries of a tenant's change log kept; a reader further behind loads everything again.
KEEP_CHANGES = 50_000
# Where a search's candidate lists come from: (words in SQL, vectors in SQL).
# The default: words by the RAM BM25 (ts_rank_cd in SQL took 1.4 s at a
# million chunks and lost 9 points of LoCoMo recall@10), vectors by HNSW
# above ANN_ABOVE (a search at 1M: 24 ms p50 against 48 ms from RAM).
SEARCH_MODES = {"mirror": (False, False), "sql": (True, True), "hnsw": (False, True)}
DEFAULT_SEARCH = "hnsw"
# The search asks for 250 rows with the iterative scan on: at a million
# chunks they held 0.998 of the exact top 10 at ef_search 64 as at 100 and
# 200, in 5.5 ms p50 against 7.0 and 7.9 (docs/postgres.md#search).
DEFAULT_EF_SEARCH = 64
_UNFILTERED = Filters(include_superseded=True)
# Below this many vectors a tenant's vector list comes from the RAM matrix in
# every mode: it is exact there, and faster (a search beyond its embedding at
# 100k: 14 ms from RAM, 24 ms with HNSW; at 300k: ~33 against 22).
ANN_ABOVE = 150_000
# ... and only for a tenant holding at least this share of every tenant's
# vectors: the index is one for all tenants, and the policy drops the others'
# rows after it; a tenant with 1 % of a million found its 250 nearest within
# pgvector's hnsw.max_scan_tuples in none of 100 searches (docs/postgres.md).
ANN_SHARE = 0.05
SHARE_SECONDS = 60.0  # how often the table's size is read again
MAX_EF_SEARCH = 1000  # pgvector's limit
_COLUMNS = CHUNK_COLUMNS.encode()
_INSERT = (
    "INSERT INTO memstrata_chunks (tenant, path, layer, line_start, line_end, text, title, "
    "session, created_at, source, ref, live) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)


class PostgresIndex(Mirror):
    """The index of ``tenant`` on the database at ``url`` (a URL, or an open
    ``Database`` the caller keeps), and its RAM mirror."""

    def __init__(
        self,
        url: str | Database,
        tenant: str,
        *,
        search: str = DEFAULT_SEARCH,
        ef_search: int = DEFAULT_EF_SEARCH,
        ann_above: int = ANN_ABOVE,
        ann_share: float = ANN_SHARE,
    ) -> None:
        super().__init__()
        if search not in SEARCH_MODES:
            raise InvalidInput(f"search must be one of {sorted(SEARCH_MODES)}, not {search!r}")
        if type(ef_search) is not int or not 1 <= ef_search <= MAX_EF_SEARCH:
            raise InvalidInput(f"ef_search must be a whole number in 1..1000, not {ef_search!r}")
        self.search = search
        self.ef_search = ef_search
        self.ann_above = ann_above
        self.ann_share = ann_share
        self._all_vectors = (-1.0, -SHARE_SECONDS)  # (rows of every tenant, when read)
        self.tenant = check_tenant(tenant)
        self.lock = threading.RLock()
        self._owned = isinstance(url, str)
        self._db = Database.shared(url) if isinstance(url, str) else url
        self._conn: Connection | None = None  # the open transaction's
        self._seen = 0  # seq of the last change of the tenant the mirror holds
        self._depth = 0
        self._writes = 0  # write transactions since the log was last pruned
        self._stale = True  # load everything at the first transaction
        try:
            self.refresh()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Let go of the shared pool (when this index opened it)."""
        with self.lock:
            if self._owned:
                self._owned = False
                self._db.release()

    # -- transactions --------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes inside commit together or not at all, and no other writer of
        this tenant writes in between."""
        with self._transaction("write the search index"):
            yield

    def refresh(self) -> None:
        """Take in what other writers committed since this handle looked."""
        with self._transaction("read the search index", write=False):
            pass

    @contextlib.contextmanager
    def _transaction(self, doing: str, *, write: bool = True) -> Iterator[Followed]:
        """One transaction (see the module); a nested one joins the outer one.
        Yields what following other writers touched."""
        with self.lock:
            if self._depth:
                yield Followed()
                return
            self._depth = 1
            self._touched, self._touched_paths, self._cleared = set(), set(), False
            try:
                with self._db.transaction(self.tenant, doing, snapshot=not write) as conn:
                    self._conn = conn
                    if write:
                        conn.execute(
                            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                            (f"memstrata.index/{self.tenant}",),
                        )
                    followed = self._follow(conn)
                    # what others committed stands: a rollback undoes only what follows
                    self._touched, self._touched_paths, self._cleared = set(), set(), False
                    yield followed
                    top = _last_change(conn)
                    if write:
                        self._prune(conn, top)
                self._seen = top
            except BaseException:
                self._conn = None
                self._abort()
                raise
            finally:
                self._conn = None
                self._depth = 0

    def _prune(self, conn: Connection, top: int) -> None:
        """Now and then, cut the tenant's log to its last ``KEEP_CHANGES`` entries."""
        self._writes += 1
        if self._writes < KEEP_CHANGES // 50:
            return
        self._writes = 0
        row = conn.execute(
            "SELECT seq FROM memstrata_changes ORDER BY seq DESC OFFSET %s LIMIT 1",
            (KEEP_CHANGES,),
        ).fetchone()
        if row is not None:
            conn.execute("DELETE FROM memstrata_changes WHERE seq <= %s", (row[0],))
            self._set_floor(conn, int(row[0]))

    def _abort(self) -> None:
        """After a rollback, read back from the database what the mirror changed
        in the transaction. Never raises: when it cannot, the mirror is marked
        stale and loaded again before its next use."""
        self._stale = True
        touched, paths, cleared = self._touched, self._touched_paths, self._cleared
        with contextlib.suppress(Exception):
            with self._db.transaction(self.tenant, "read the search index", snapshot=True) as conn:
                if cleared:
                    self._reload(conn)
                else:
                    self._resync(conn, touched, paths)
            self._stale = False

    def _follow(self, conn: Connection) -> Followed:
        """Take in the changes other writers committed since ``_seen``; all of
        the tenant's index when the log no longer reaches back there."""
        top = _last_change(conn)
        if not self._stale and top == self._seen:
            return Followed()
        row = conn.execute("SELECT floor FROM memstrata_index_state").fetchone()
        floor = int(row[0]) if row else 0
        if self._stale or floor > self._seen:
            self._reload(conn)
            return Followed(everything=True)
        followed = Followed.of_log(
            conn.execute(
                "SELECT chunk_id, path FROM memstrata_changes WHERE seq > %s", (self._seen,)
            )
        )
        followed.paths |= self._resync(conn, followed.ids, followed.paths)
        self._seen = top
        return followed

    def _reload(self, conn: Connection) -> None:
        self._clear_mirror()
        self._seen = _last_change(conn)
        chunks = conn.execute(b"SELECT " + _COLUMNS + b" FROM memstrata_chunks ORDER BY id")
        files = conn.execute("SELECT path, size, mtime_ns, sha256 FROM memstrata_files")
        vectors = conn.execute(
            "SELECT chunk_id, model, vec FROM memstrata_vectors ORDER BY chunk_id"
        )
        self._load_rows(
            ((row[0], row_chunk(row)) for row in chunks),
            ((path, FileState(size, mtime_ns, sha)) for path, size, mtime_ns, sha in files),
            ((cid, model, bytes(vec)) for cid, model, vec in vectors),
        )
        self._stale = False

    def _resync(self, conn: Connection, ids: set[int], paths: set[str]) -> set[str]:
        """Make the mirror hold what the database holds for these chunk ids and
        file paths; returns the paths of the chunks that changed."""
        wanted = sorted(ids)
        found = {
            row[0]: row_chunk(row)
            for row in conn.execute(
                b"SELECT " + _COLUMNS + b" FROM memstrata_chunks WHERE id = ANY(%s)", (wanted,)
            )
        }
        vectors = {
            cid: (model, bytes(vec))
            for cid, model, vec in conn.execute(
                "SELECT chunk_id, model, vec FROM memstrata_vectors WHERE chunk_id = ANY(%s)",
                (wanted,),
            )
        }
        names = sorted(paths)
        states = {
            row[0]: FileState(*row[1:])
            for row in conn.execute(
                "SELECT path, size, mtime_ns, sha256 FROM memstrata_files WHERE path = ANY(%s)",
                (names,),
            )
        }
        return self._take_rows(wanted, found, vectors, names, states)

    # -- writes --------------------------------------------------------------------

    def replace(
        self, path: str, chunks: Sequence[Chunk], state: FileState | None, *, append: bool = False
    ) -> list[int]:
        """Make ``path``'s chunks ``chunks`` (``append``: add them) and record
        ``state`` (None: forget the file); the new chunk ids. An append raises
        ``Stale`` when another writer indexed ``path`` since the caller looked."""
        with self._transaction(f"index {path}") as followed:
            conn = self._open()
            if append and followed.touches(path):
                raise Stale(f"{path} was indexed by another writer meanwhile")
            if not append:
                self._delete(conn, list(self._by_path.get(path, ())))
            ids = self._insert(conn, chunks)
            if state is None:
                conn.execute("DELETE FROM memstrata_files WHERE path = %s", (path,))
            else:
                conn.execute(
                    "INSERT INTO memstrata_files (tenant, path, size, mtime_ns, sha256) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant, path) DO UPDATE SET "
                    "size = excluded.size, mtime_ns = excluded.mtime_ns, "
                    "sha256 = excluded.sha256, indexed_at = now()",
                    (self.tenant, path, state.size, state.mtime_ns, state.sha256),
                )
            self._file_state(path, state)
        return ids

    def replace_refs(self, path: str, refs: Iterable[str], chunks: Sequence[Chunk]) -> list[int]:
        """Replace the chunks of ``path`` whose ref is in ``refs`` by ``chunks``."""
        wanted = set(refs)
        with self._transaction(f"index {path}"):
            conn = self._open()
            old = [cid for ref in wanted for cid in self._by_ref.get((path, ref), ())]
            self._delete(conn, old)
            return self._insert(conn, chunks)

    def set_vectors(self, model: str, vectors: Mapping[int, bytes]) -> None:
        """Store vectors of ``model``; ids that are gone, or that another writer
        changed since the caller read them, are skipped (they stay unembedded)."""
        with self._transaction("store vectors in the search index") as followed:
            conn = self._open()
            if self.vector_model not in (None, model):
                conn.execute("DELETE FROM memstrata_vectors")
                self._drop_vectors()
            rows = [
                (cid, vec)
                for cid, vec in vectors.items()
                if cid in self.chunks and cid not in followed.ids and not followed.everything
            ]
            if rows:
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO memstrata_vectors (chunk_id, tenant, model, vec, embedding) "
                        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (chunk_id) DO UPDATE SET "
                        "model = excluded.model, vec = excluded.vec, "
                        "embedding = excluded.embedding",
                        [(cid, self.tenant, model, vec, _embedding(vec)) for cid, vec in rows],
                    )
            for cid, vec in rows:
                self._vector_set(cid, vec)
            self.vector_model = model

    def drop(self) -> None:
        """Empty the tenant's index: the next sync rebuilds it."""
        with self._transaction("empty the search index"):
            conn = self._open()
            for table in ("memstrata_vectors", "memstrata_chunks", "memstrata_files"):
                conn.execute(b"DELETE FROM " + table.encode())
            conn.execute("DELETE FROM memstrata_changes")
            # the log starts after a floor: every other reader loads everything again
            row = conn.execute(
                "INSERT INTO memstrata_changes (tenant) VALUES (%s) RETURNING seq", (self.tenant,)
            ).fetchone()
            assert row is not None
            self._set_floor(conn, int(row[0]))
            self._clear_mirror()

    def _open(self) -> Connection:
        assert self._conn is not None, "inside a transaction"
        return self._conn

    def _set_floor(self, conn: Connection, seq: int) -> None:
        conn.execute(
            "INSERT INTO memstrata_index_state (tenant, floor) VALUES (%s, %s) "
            "ON CONFLICT (tenant) DO UPDATE SET floor = excluded.floor",
            (self.tenant, seq),
        )

    def _delete(self, conn: Connection, ids: list[int]) -> None:
        if ids:
            conn.execute("DELETE FROM memstrata_chunks WHERE id = ANY(%s)", (ids,))
        for cid in ids:
            self._unmapped(cid)

    def _insert(self, conn: Connection, chunks: Sequence[Chunk]) -> list[int]:
        """Insert ``chunks`` (one pipelined batch: ``executemany`` with each
        row's new id returned, in order) and map them in the mirror."""
        if not chunks:
            return []
        ids = []
        with conn.cursor() as cursor:
            cursor.executemany(
                _INSERT, [(self.tenant, *chunk_values(chunk)) for chunk in chunks], returning=True
            )
            while True:
                row = cursor.fetchone()
                assert row is not None
                ids.append(int(row[0]))
                if not cursor.nextset():
                    break
        for cid, chunk in zip(ids, chunks, strict=True):
            self._mapped(cid, chunk)
            self.unembedded.add(cid)
        return ids

    # -- reads ---------------------------------------------------------------------

    def finds(self, vector: np.ndarray | None) -> tuple[bool, bool]:
        """Which lists of a search ``candidates`` finds in SQL: (words, vectors)."""
        in_sql, vectors_in_sql = SEARCH_MODES[self.search]
        return in_sql, (
            vectors_in_sql
            and vector is not None
            and vector.shape == (VECTOR_DIM,)
            and len(self.vectors) > self.ann_above
            and self._share_enough()
        )

    def _share_enough(self) -> bool:
        """Whether this tenant holds ``ann_share`` of every tenant's vectors
        (the planner's estimate, read at most every ``SHARE_SECONDS``; unknown
        before the table was first analyzed: yes)."""
        rows, read_at = self._all_vectors
        if self.ann_share <= 0:
            return True
        if time.monotonic() - read_at >= SHARE_SECONDS:
            with self._db.transaction(self.tenant, "measure the vector table") as conn:
                row = conn.execute(  # the index's entries: vectors of 384 dimensions
                    "SELECT reltuples FROM pg_class "
                    "WHERE oid = to_regclass('memstrata_vectors_hnsw')"
                ).fetchone()
            rows = float(row[0]) if row else -1.0
            self._all_vectors = (rows, time.monotonic())
        return rows <= 0 or len(self.vectors) >= self.ann_share * rows

    def candidates(
        self, query: str, vector: np.ndarray | None, limit: int, filters: Filters
    ) -> tuple[Ranked | None, Ranked | None]:
        """A search's candidate lists from SQL, as ``search`` says (None: from
        the RAM followers; see ``index.hybrid.CandidateSource``)."""
        in_sql, vectors_in_sql = self.finds(vector)
        if not (in_sql or vectors_in_sql):
            return None, None
        words = near = None
        with self._db.transaction(self.tenant, "search the index") as conn:
            if in_sql:
                words = candidates.word_rows(conn, query, limit, filters)
            if vectors_in_sql:
                assert vector is not None
                candidates.settings(conn, self.ef_search)
                near = self._nearest(conn, vector, limit, filters)
        return words, near

    def _nearest(
        self, conn: Connection, vector: np.ndarray, limit: int, filters: Filters
    ) -> Ranked | None:
        """The vector list from the HNSW index: first the index alone, its rows
        checked against ``filters`` here, on the mirror (a join to the chunks
        in SQL costs as much again as the index scan); when they left too few,
        again with the filters in SQL (the iterative scan goes on past the rows
        they drop). None: leave it to the RAM matrix."""
        ask = limit + limit // 4  # room for what only RAM checks (the time window)
        for where in dict.fromkeys((_UNFILTERED, filters)):
            near = candidates.nearest_rows(conn, vector, ask, where)
            kept = self._kept(near, ask, limit, filters)
            if kept is not None or len(near) < ask:  # found, or the tenant has no more
                return kept
        return None

    def _kept(
        self, near: list[tuple[int, float]], ask: int, limit: int, filters: Filters
    ) -> Ranked | None:
        """The nearest rows the mirror holds and ``filters`` accept, as
        ``(id, cosine)``; None when they are fewer than ``limit`` and SQL may
        have missed some (it returned fewer than asked, or RAM filters
        dropped some): the RAM matrix finds them then."""
        chunks = self.chunks
        kept = [
            (cid, 1.0 - distance)
            for cid, distance in near
            if distance < 1.0 and cid in chunks and filters.accept(chunks[cid])
        ]
        if len(kept) >= limit or (len(near) == ask and near[-1][1] >= 1.0):
            return kept[:limit]
        return None

    def status(self) -> IndexStatus:
        return IndexStatus(
            f"{self._db.location}#{self.tenant}",
            self.size_bytes(),
            len(self.chunks),
            len(self.files),
            len(self.vectors),
            self.vector_model,
        )

    def size_bytes(self) -> int:
        """The bytes of the tenant's rows (chunks and vectors)."""
        with self._db.transaction(self.tenant, "measure the search index") as conn:
            row = conn.execute(
                "SELECT coalesce((SELECT sum(pg_column_size(c.*)) FROM memstrata_chunks c), 0)"
                " + coalesce((SELECT sum(pg_column_size(v.*)) FROM memstrata_vectors v), 0)"
            ).fetchone()
        return int(row[0]) if row else 0


def _last_change(conn: Connection) -> int:
    """The ``seq`` of the tenant's last logged change (0: none)."""
    row = conn.execute("SELECT coalesce(max(seq), 0) FROM memstrata_changes").fetchone()
    return int(row[0]) if row else 0


def _embedding(vec: bytes) -> object | None:
    """``vec`` for the ``vector(384)`` column (None when it has another size)."""
    if len(vec) != VECTOR_DIM * 4:
        return None
    import numpy as np
    from pgvector import Vector

    return Vector(np.frombuffer(vec, dtype="<f4"))
