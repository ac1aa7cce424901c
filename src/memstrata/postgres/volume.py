"""``PostgresVolume``: one tenant's workspace files in PostgreSQL, a
``storage.volume.Volume`` (the contract is that module's).

Tables (``schema``, migration ``0004_files``, each under the tenant policy):
``memstrata_volume`` (one row per file: ``content``, ``size``, whether it
ends in a line break, how many ``parts`` follow, ``mtime_ns``, ``inode``) and
``memstrata_volume_parts`` (what ``append`` added, in ``seq`` order).

* **A file is its content, then its parts.** ``append`` inserts a part and
  updates the file's row (PostgreSQL keeps the large ``content`` value where it
  is), so appending to a long transcript costs the bytes appended; ``read``
  concatenates them; ``write`` replaces the content and drops the parts; after
  ``FOLD_PARTS`` parts an ``append`` folds them into the content (one rewrite
  per ``FOLD_PARTS`` appends).
* **Stat.** ``inode`` takes a fresh value of the ``memstrata_volume_inode``
  sequence at every write and append (``rename`` keeps it, as on a disk), so a
  ``Stat`` equal to an earlier one means the same bytes. ``mtime_ns`` is the
  database's clock (microseconds) at the write: one clock for every machine.
* **Every call is atomic**: a transaction of its own, or a savepoint in the
  transaction of the ``PostgresLock`` it is bound to when the calling thread
  holds that lock (``PostgresLock.connection``); then what it writes is seen
  by others when the lock is released. ``swap``, ``append`` and ``rename``
  lock the file's row (``FOR UPDATE``), so a racing writer waits and is never
  lost: ``swap`` never has bytes to rescue (``Swapped.rescued`` is None).
* ``durable=False`` changes nothing: every commit is durable.
* Paths are ``clean_rel``'d; a file and a folder may share a name (there are
  no folders), which a disk refuses: the stores never do it.
* Errors are ``memstrata.errors`` only (``connect.errors``): ``rename`` of a
  missing file is ``NotFound``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import NotFound
from ..storage.volume import Stat, Swapped, clean_prefix, clean_rel
from .connect import Database
from .lock import PostgresLock, bind

if TYPE_CHECKING:
    from .connect import Connection

__all__ = ["FOLD_PARTS", "PostgresVolume"]

FOLD_PARTS = 1000  # parts after which an append folds them into the content

_NOW = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000"
_INODE = "nextval('memstrata_volume_inode')"
_READ = (
    "SELECT f.content || coalesce((SELECT string_agg(p.data, ''::bytea ORDER BY p.seq) "
    "FROM memstrata_volume_parts p WHERE p.tenant = f.tenant AND p.path = f.path), ''::bytea) "
    "FROM memstrata_volume f WHERE f.path = %s"
)
# The parts that hold the file's last %(size)s bytes, and as much of the
# content as they leave short (the content is not read when they do not).
_TAIL = (
    "WITH p AS (SELECT seq, data, sum(length(data)) OVER (ORDER BY seq DESC) AS upto "
    "FROM memstrata_volume_parts WHERE path = %(path)s), "
    "kept AS (SELECT seq, data, upto FROM p WHERE upto - length(data) < %(size)s), "
    "got AS (SELECT coalesce(max(upto), 0) AS n, "
    "coalesce(string_agg(data, ''::bytea ORDER BY seq), ''::bytea) AS data FROM kept) "
    "SELECT f.size, CASE WHEN got.n >= %(size)s THEN ''::bytea ELSE substring(f.content "
    "FROM greatest(length(f.content) - (%(size)s - got.n) + 1, 1)::int) END || got.data "
    "FROM memstrata_volume f, got WHERE f.path = %(path)s"
)
_STAT = "SELECT size, mtime_ns, inode FROM memstrata_volume WHERE path = %s"
_CREATE = (
    "INSERT INTO memstrata_volume (tenant, path, content, size, line_ended, mtime_ns, inode) "
    f"VALUES (%s, %s, %s, %s, %s, {_NOW}, {_INODE}) ON CONFLICT (tenant, path) DO NOTHING"
)
_WRITE = (
    "WITH dropped AS (DELETE FROM memstrata_volume_parts WHERE path = %(path)s) "
    "INSERT INTO memstrata_volume (tenant, path, content, size, line_ended, mtime_ns, inode) "
    f"VALUES (%(tenant)s, %(path)s, %(data)s, %(size)s, %(ended)s, {_NOW}, {_INODE}) "
    "ON CONFLICT (tenant, path) DO UPDATE SET content = EXCLUDED.content, size = EXCLUDED.size, "
    "line_ended = EXCLUDED.line_ended, parts = 0, mtime_ns = EXCLUDED.mtime_ns, "
    "inode = EXCLUDED.inode"
)
_APPEND_PART = (
    "WITH part AS (INSERT INTO memstrata_volume_parts (tenant, path, seq, data) "
    f"VALUES (%(tenant)s, %(path)s, {_INODE}, %(data)s) RETURNING seq) "
    "UPDATE memstrata_volume SET size = size + %(size)s, line_ended = %(ended)s, "
    f"parts = parts + 1, mtime_ns = {_NOW}, inode = (SELECT seq FROM part) WHERE path = %(path)s"
)
_FOLD = (
    "UPDATE memstrata_volume f SET content = f.content || coalesce((SELECT string_agg(p.data, "
    "''::bytea ORDER BY p.seq) FROM memstrata_volume_parts p WHERE p.tenant = f.tenant "
    "AND p.path = f.path), ''::bytea) || %(data)s, size = size + %(size)s, "
    f"line_ended = %(ended)s, parts = 0, mtime_ns = {_NOW}, inode = {_INODE} WHERE path = %(path)s"
)
_TOUCH = f"UPDATE memstrata_volume SET mtime_ns = {_NOW}, inode = {_INODE} WHERE path = %s"
_LIST = "SELECT path, size, mtime_ns, inode FROM memstrata_volume"


class PostgresVolume:
    """The files of ``tenant`` on the database at ``db`` (a URL, or an open
    ``Database`` the caller keeps); bound to ``lock`` (of the same tenant and
    database) when given, else to a lock of its own."""

    def __init__(
        self, db: str | Database, tenant: str, *, lock: PostgresLock | None = None
    ) -> None:
        self.lock, self._owns_lock = bind(db, tenant, lock)
        self.tenant = self.lock.tenant

    def __repr__(self) -> str:
        return f"PostgresVolume({self.where})"

    @property
    def where(self) -> str:
        return self.lock.where

    @property
    def local(self) -> Path | None:
        return None

    def close(self) -> None:
        """Let go of the lock (and the pool) when this volume made its own."""
        if self._owns_lock:
            self._owns_lock = False
            self.lock.close()

    # -- reads -----------------------------------------------------------------------

    def read(self, rel: str) -> bytes | None:
        clean_rel(rel)
        with self.lock.connection(f"read {rel}") as conn:
            row = conn.execute(_READ, (rel,)).fetchone()
        return None if row is None else bytes(row[0])

    def tail(self, rel: str, size: int) -> tuple[bytes, bool] | None:
        clean_rel(rel)
        with self.lock.connection(f"read the end of {rel}") as conn:
            row = conn.execute(_TAIL, {"path": rel, "size": max(size, 0)}).fetchone()
        if row is None:
            return None
        data = bytes(row[1])
        return data, len(data) == row[0]

    def stat(self, rel: str) -> Stat | None:
        clean_rel(rel)
        with self.lock.connection(f"stat {rel}") as conn:
            row = conn.execute(_STAT, (rel,)).fetchone()
        return None if row is None else Stat(*row)

    def list(self, prefix: str = "") -> list[tuple[str, Stat]]:
        clean_prefix(prefix)
        with self.lock.connection(f"list {prefix or 'the files'}") as conn:
            if prefix:
                # every path that starts with "x/" sorts in ["x/", "x0"): '0' follows '/'
                end = prefix[:-1] + "0"
                query = f"{_LIST} WHERE path >= %s AND path < %s ORDER BY path"
                rows = conn.execute(query.encode(), (prefix, end)).fetchall()
            else:
                rows = conn.execute(f"{_LIST} ORDER BY path".encode()).fetchall()
        return [(path, Stat(size, mtime, inode)) for path, size, mtime, inode in rows]

    # -- writes ----------------------------------------------------------------------

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None:
        clean_rel(rel)
        with self.lock.connection(f"write {rel}") as conn:
            self._write(conn, rel, data)

    def create(self, rel: str, data: bytes) -> bool:
        clean_rel(rel)
        with self.lock.connection(f"create {rel}") as conn:
            return self._create(conn, rel, data)

    def append(self, rel: str, data: bytes, *, header: bytes = b"") -> None:
        clean_rel(rel)
        with self.lock.connection(f"append to {rel}") as conn:
            while True:
                row = conn.execute(
                    "SELECT size, line_ended, parts FROM memstrata_volume "
                    "WHERE path = %s FOR UPDATE",
                    (rel,),
                ).fetchone()
                if row is not None:
                    break
                if self._create(conn, rel, header + data):
                    return
                # created by another writer meanwhile: append to what it wrote
            size, ended, parts = row
            if size == 0:
                self._write(conn, rel, header + data)
            elif not ended or data:
                self._add(conn, rel, (b"" if ended else b"\n") + data, fold=parts + 1 >= FOLD_PARTS)
            else:  # nothing to add: still a write, so the stat changes
                conn.execute(_TOUCH, (rel,))

    def rename(self, src: str, dst: str) -> None:
        clean_rel(src)
        clean_rel(dst)
        with self.lock.connection(f"rename {src} to {dst}") as conn:
            found = conn.execute(
                "SELECT 1 FROM memstrata_volume WHERE path = %s FOR UPDATE", (src,)
            ).fetchone()
            if found is None:
                raise NotFound(f"cannot rename {src}: no such file ({self.where})")
            if src != dst:
                conn.execute("DELETE FROM memstrata_volume WHERE path = %s", (dst,))
                conn.execute("UPDATE memstrata_volume SET path = %s WHERE path = %s", (dst, src))

    def delete(self, rel: str) -> bool:
        clean_rel(rel)
        with self.lock.connection(f"delete {rel}") as conn:
            done = conn.execute("DELETE FROM memstrata_volume WHERE path = %s", (rel,))
            return done.rowcount > 0

    def swap(self, rel: str, data: bytes, expect: Stat | None) -> Swapped:
        clean_rel(rel)
        with self.lock.connection(f"replace {rel}") as conn:
            row = conn.execute(f"{_STAT} FOR UPDATE", (rel,)).fetchone()
            if (None if row is None else Stat(*row)) != expect:
                return Swapped(False)
            if row is None:
                if not self._create(conn, rel, data):
                    return Swapped(False)
            else:
                self._write(conn, rel, data)
            placed = conn.execute(_STAT, (rel,)).fetchone()
            return Swapped(True, None, None if placed is None else Stat(*placed))

    # -- statements ------------------------------------------------------------------

    def _params(self, rel: str, data: bytes) -> dict[str, object]:
        """The parameters of a statement that puts ``data`` at ``rel``."""
        return {
            "tenant": self.tenant,
            "path": rel,
            "data": data,
            "size": len(data),
            "ended": data.endswith(b"\n"),
        }

    def _write(self, conn: Connection, rel: str, data: bytes) -> None:
        conn.execute(_WRITE, self._params(rel, data))

    def _create(self, conn: Connection, rel: str, data: bytes) -> bool:
        params = (self.tenant, rel, data, len(data), data.endswith(b"\n"))
        return conn.execute(_CREATE, params).rowcount > 0

    def _add(self, conn: Connection, rel: str, data: bytes, *, fold: bool) -> None:
        params = self._params(rel, data)
        if fold:
            conn.execute(_FOLD, params)
            conn.execute("DELETE FROM memstrata_volume_parts WHERE path = %s", (rel,))
        else:
            conn.execute(_APPEND_PART, params)
