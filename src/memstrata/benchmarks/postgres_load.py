"""Loading the search bench's PostgreSQL (``postgres_search``): chunks and
vectors through the product's write path, the HNSW index built once after
a bulk load (on a server the bench started), the tables vacuumed, sizes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..index.protocol import FileState, Index
from ..postgres.schema import HNSW_EF_CONSTRUCTION, HNSW_M
from . import pgserver
from .corpus import DIM, TURNS_PER_FILE, Corpus

if TYPE_CHECKING:
    import numpy as np

    from ..postgres.index import PostgresIndex

__all__ = ["HNSW", "MODEL", "embed_all", "load", "migrate_with", "number", "sizes", "sql"]

MODEL = "synthetic-384"
HNSW = {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION}  # the schema's (migration 0006)
Log = Callable[[str], None]


# -- load ---------------------------------------------------------------------------------


def load(
    index: PostgresIndex,
    corpus: Corpus,
    start: int,
    stop: int,
    server: pgserver.Server,
    work_mem: str,
    log: Log,
    *,
    hnsw: dict[str, int] | None = None,
    rebuild: bool = False,
) -> dict[str, Any]:
    """Chunks and vectors through the product's write path, then the HNSW
    index built (on a server the bench started; on another the index stays
    and grows with the load); what is there already (a kept server) is not
    loaded again."""
    out: dict[str, Any] = {"path": "PostgresIndex.replace (one file of 200 chunks a "
                           "transaction; executemany) and set_vectors (executemany)"}  # fmt: skip
    have = len(index.chunks)
    if have < stop - start:
        began = time.perf_counter()
        first = start + have - have % TURNS_PER_FILE
        for number, (path, chunks) in enumerate(corpus.files(first, stop)):
            index.replace(path, chunks, FileState(len(chunks), 0, path))
            if number % 500 == 0:
                log(f"chunks: {first + number * TURNS_PER_FILE - start:,} / {stop - start:,}")
        seconds = time.perf_counter() - began
        out["chunks_per_s"] = round((stop - start - have) / seconds)
        out["chunks_s"] = round(seconds, 1)
    missing = sorted(index.unembedded)
    own = server.admin is not None  # a server the bench started: no one else uses it
    if missing:
        # a shared database's index is left alone: the load grows it a row at a time
        out["hnsw_dropped_for_load"] = own and _drop_hnsw(server.app)
        out.update(embed_all(index, corpus, missing, log))
    if own and rebuild and not missing:
        _drop_hnsw(server.app)
    if own and not _has_hnsw(server.app):
        out["hnsw_build"] = _build_hnsw(server.app, work_mem, log, hnsw or HNSW)
        began = time.perf_counter()
        _vacuum(server.app)
        out["vacuum_analyze_s"] = round(time.perf_counter() - began, 1)
    found = sql(
        server.app, ["SELECT indexdef FROM pg_indexes WHERE indexname = 'memstrata_vectors_hnsw'"]
    )
    out["hnsw_index"] = found[0][0][0] if found[0] else None
    return out


def migrate_with(url: str, work_mem: str, log: Log) -> dict[str, Any]:
    """The schema's pending migrations, run with ``maintenance_work_mem`` set
    (0006 builds the HNSW index again on a database made before it)."""
    import psycopg

    from ..postgres.schema import migrate

    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET maintenance_work_mem = '{work_mem}'".encode())
        names = migrate(conn)
    seconds = time.perf_counter() - began
    log(f"migrations {names} in {seconds:.1f} s")
    return {"names": names, "seconds": round(seconds, 1)}


def number(ref: str | None) -> int:
    """A corpus chunk's number, from its ref (``t123#m``, ``n123``)."""
    assert ref is not None
    return int(ref[1:].split("#")[0])


def embed_all(index: Index, corpus: Corpus, missing: list[int], log: Log) -> dict[str, Any]:
    began = time.perf_counter()
    numbers = {cid: number(index.chunks[cid].ref) for cid in missing}
    for at in range(0, len(missing), 2000):
        batch = missing[at : at + 2000]
        order = sorted(batch, key=numbers.__getitem__)
        rows = [numbers[cid] for cid in order]
        matrix = _vectors_of(corpus, rows)
        index.set_vectors(MODEL, {cid: matrix[n].tobytes() for n, cid in enumerate(order)})
        if at % 100_000 == 0:
            log(f"vectors: {at:,} / {len(missing):,}")
    seconds = time.perf_counter() - began
    return {"vectors_per_s": round(len(missing) / seconds), "vectors_s": round(seconds, 1)}


def _vectors_of(corpus: Corpus, numbers: list[int]) -> np.ndarray:
    """The vectors of these chunk numbers (runs of consecutive ones drawn together)."""
    import numpy as np

    out = np.empty((len(numbers), DIM), dtype=np.float32)
    at = 0
    while at < len(numbers):
        end = at
        while end + 1 < len(numbers) and numbers[end + 1] == numbers[end] + 1:
            end += 1
        out[at : end + 1] = corpus.vectors(numbers[at], numbers[end] + 1)
        at = end + 1
    return out


def sql(url: str, statements: Sequence[str]) -> list[list[Any]]:
    """Run statements as the app (the tables' owner), outside any tenant; the
    rows of each (none for a statement that returns none)."""
    import psycopg

    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        for sql in statements:
            cursor = conn.execute(sql.encode())
            out.append(cursor.fetchall() if cursor.description else [])
    return out


def _has_hnsw(url: str) -> bool:
    found = sql(url, ["SELECT 1 FROM pg_indexes WHERE indexname = 'memstrata_vectors_hnsw'"])
    return bool(found[0])


def _drop_hnsw(url: str) -> bool:
    """Drop the HNSW index for a bulk load (an index built once is faster and
    better than one grown a row at a time); False when there was none."""
    had = _has_hnsw(url)
    sql(url, ["DROP INDEX IF EXISTS memstrata_vectors_hnsw"])
    return had


def _build_hnsw(url: str, work_mem: str, log: Log, hnsw: dict[str, int]) -> dict[str, Any]:
    import psycopg

    log(f"building the HNSW index {hnsw}, maintenance_work_mem {work_mem}")
    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET maintenance_work_mem = '{work_mem}'".encode())
        row = conn.execute("SHOW max_parallel_maintenance_workers").fetchone()
        workers = row[0] if row else "?"
        conn.execute(
            "CREATE INDEX memstrata_vectors_hnsw ON memstrata_vectors USING hnsw "
            f"(embedding vector_cosine_ops) WITH (m = {hnsw['m']}, "
            f"ef_construction = {hnsw['ef_construction']})".encode()
        )
        size = conn.execute("SELECT pg_relation_size('memstrata_vectors_hnsw')").fetchone()
    seconds = time.perf_counter() - began
    log(f"HNSW built in {seconds:.0f} s")
    return {
        "seconds": round(seconds, 1),
        **hnsw,
        "maintenance_work_mem": work_mem,
        "max_parallel_maintenance_workers": workers,
        "index_mb": round(size[0] / 2**20) if size else None,
    }


def _vacuum(url: str) -> None:
    sql(url, ["VACUUM (ANALYZE) memstrata_chunks", "VACUUM (ANALYZE) memstrata_vectors",
               "VACUUM (ANALYZE) memstrata_changes"])  # fmt: skip


def sizes(url: str) -> dict[str, int]:
    names = ["memstrata_chunks", "memstrata_vectors", "memstrata_vectors_hnsw",
             "memstrata_chunks_tsv", "memstrata_changes"]  # fmt: skip
    query = "SELECT " + ", ".join(f"pg_total_relation_size('{n}')" for n in names)
    row = sql(url, [query])[0][0]
    return {f"{name}_mb": round(size / 2**20) for name, size in zip(names, row, strict=True)}
