"""The index file's schema: named, ordered migrations, and rows as chunks.

* **Migrations** are named and ordered (``MIGRATIONS``); each runs once and is
  recorded in ``migrations``. The pending ones run in one ``BEGIN IMMEDIATE``
  transaction that first reads again which are done, so two processes that
  create the same index file at once run each migration once: the second
  finds them done (it never takes the first one's tables for a broken file).
* A file whose recorded migrations are not a prefix of this code's (a newer
  memstrata wrote it) raises ``NewerSchema``: the caller rebuilds the file
  rather than guess at it.
* No FTS5 table (dropped by 0006): BM25 is computed in RAM from ``chunks``.
* **The change log** (``changes``, 0005): triggers append the chunk id of every
  chunk and every vector inserted or deleted, and the path of every ``files``
  row written or deleted, whoever writes (so cascades and other processes are
  logged too). ``seq`` is AUTOINCREMENT: it never goes back and is never
  reused, so ``seq`` after the last change a process has taken in tells it
  exactly what other processes committed since (``Index`` follows it). The
  oldest entries are pruned; a reader whose place was pruned loads again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..model import parse_time
from .chunks import Chunk

__all__ = ["CHUNK_COLUMNS", "MIGRATIONS", "NewerSchema", "last_change", "migrate", "row_chunk"]

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
    (
        "0005_changes",
        """
        CREATE TABLE changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id INTEGER, path TEXT
        );
        CREATE TRIGGER chunk_added AFTER INSERT ON chunks BEGIN
            INSERT INTO changes (chunk_id) VALUES (new.id);
        END;
        CREATE TRIGGER chunk_removed AFTER DELETE ON chunks BEGIN
            INSERT INTO changes (chunk_id) VALUES (old.id);
        END;
        CREATE TRIGGER vector_added AFTER INSERT ON vectors BEGIN
            INSERT INTO changes (chunk_id) VALUES (new.chunk_id);
        END;
        CREATE TRIGGER vector_removed AFTER DELETE ON vectors BEGIN
            INSERT INTO changes (chunk_id) VALUES (old.chunk_id);
        END;
        CREATE TRIGGER file_added AFTER INSERT ON files BEGIN
            INSERT INTO changes (path) VALUES (new.path);
        END;
        CREATE TRIGGER file_changed AFTER UPDATE ON files BEGIN
            INSERT INTO changes (path) VALUES (old.path), (new.path);
        END;
        CREATE TRIGGER file_removed AFTER DELETE ON files BEGIN
            INSERT INTO changes (path) VALUES (old.path);
        END;
        """,
    ),
    # Search's BM25 is in RAM (``lexical.Lexical``, from ``chunks``): the FTS5
    # table was written on every insert and read by nothing but a test. At
    # 100,000 fact chunks it was 44 % of the file (28.7 MB -> 16.1 MB) and 43 %
    # of the write time (3.0 s -> 1.7 s; bench/bench_index_write.py).
    ("0006_drop_fts5", "DROP TABLE IF EXISTS chunks_fts"),
)
# Migrations after which every chunk's FTS5 row is written again from Python.
_RETOKENIZE = frozenset({"0004_retokenize_clitics"})

CHUNK_COLUMNS = (
    "id, path, layer, line_start, line_end, text, title, session, created_at, source, ref, live"
)


class NewerSchema(Exception):
    """The file was written by a newer memstrata (its migrations are not ours)."""


def migrate(db: sqlite3.Connection) -> None:
    """Run the migrations the file lacks (see the module invariants)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS migrations "
        "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
    )
    if _done(db) == len(MIGRATIONS):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for name, sql in MIGRATIONS[_done(db) :]:
            for statement in _statements(sql):
                db.execute(statement)
            if name in _RETOKENIZE:
                _retokenize(db)
            db.execute("INSERT INTO migrations (name) VALUES (?)", (name,))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def last_change(db: sqlite3.Connection) -> int:
    """The ``seq`` of the last change ever logged in the file (0: none)."""
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").fetchone()
    return int(row[0]) if row is not None else 0


def chunk_values(chunk: Chunk) -> tuple[Any, ...]:
    """A chunk's column values in ``CHUNK_COLUMNS`` order, without the id
    (what an insert writes; ``row_chunk`` reads it back)."""
    created = chunk.created_at.isoformat() if chunk.created_at else None
    return (
        chunk.path,
        chunk.layer,
        chunk.line_start,
        chunk.line_end,
        chunk.text,
        chunk.title,
        chunk.session,
        created,
        chunk.source,
        chunk.ref,
        chunk.live,
    )


def row_chunk(row: Sequence[Any]) -> Chunk:
    """A chunk from a row of ``CHUNK_COLUMNS``."""
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


def _done(db: sqlite3.Connection) -> int:
    """How many of ``MIGRATIONS`` the file has; ``NewerSchema`` if not a prefix."""
    done = [row[0] for row in db.execute("SELECT name FROM migrations ORDER BY name")]
    names = [name for name, _ in MIGRATIONS]
    if done != names[: len(done)]:
        raise NewerSchema(f"index migrations {done} are not a prefix of {names}")
    return len(done)


def _statements(sql: str) -> Iterator[str]:
    """The statements of a script (a trigger's body keeps its own semicolons)."""
    pending = ""
    for piece in sql.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


def _retokenize(db: sqlite3.Connection) -> None:
    """Write every chunk's FTS5 row again with today's ``index_text``."""
    from .text import index_text

    rows = db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks").fetchall()  # noqa: S608
    db.executemany(
        "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)",
        ((row[0], index_text(row_chunk(row).body)) for row in rows),
    )
