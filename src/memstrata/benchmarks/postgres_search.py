"""``memstrata bench search --backend postgresql://…`` (and
``bench/bench_postgres_search.py``): hybrid search on PostgreSQL at N
chunks, the RAM mirror and the SQL candidate paths side by side, the
recall of the HNSW index, ingest, two tenants, 16 concurrent clients, and
the file backend (SQLite and its mirror) at the same N.

The data is ``corpus.Corpus``: synthetic text and synthetic vectors (NOT
embeddings of the text: a million texts cannot be embedded on two cores);
each search still embeds its real question with the real embedder, and
that time is in the latency (and reported on its own). Phases, each timed:

1. **load** through the product's write path (``PostgresIndex.replace`` per
   file, then ``set_vectors``) with the HNSW index dropped, then the index
   built (``CREATE INDEX``; its settings reported) and the tables vacuumed;
2. **recall** of ``ORDER BY embedding <=> q LIMIT 10`` against the exact
   top 10 (numpy over every vector), per ``ef_search``, with and without the
   iterative scan;
3. **search**: ``hybrid`` as ``Memory.search`` calls it, per mode
   (``PostgresIndex.search``), p50/p99 with the query's embedding;
4. **tenants**: a small tenant (1 % of N, vectors among the big one's)
   loaded with the HNSW index in place: recall and latency under the
   row-level security filter;
5. **concurrency**: client threads sharing the index, mixing searches and
   writes (a file of 5 chunks and their vectors);
6. **file backend**: the same chunks in ``index.sqlite.Index``, searched
   through its mirror.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..index.hybrid import Filters, Hit, Vectors, Weights, hybrid
from ..index.lexical import Lexical
from ..index.protocol import FileState, Index
from ..memory.search import DEFAULT_LAYERS
from . import pgserver
from .corpus import CLUSTERS, DIM, SUBSPACE, Corpus, Query
from .postgres_load import MODEL, embed_all, load, migrate_with, sizes

if TYPE_CHECKING:
    import numpy as np

    from ..postgres.index import PostgresIndex

__all__ = ["run"]

FILTERS = Filters(layers=DEFAULT_LAYERS)  # what Memory.search looks in by default
SQL_QUERIES = 50  # of the "sql" mode: a second a search at a million chunks
WRITTEN = "sessions/load-"  # the files the concurrency phase writes
Log = Callable[[str], None]


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pct(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {
        "p50": round(statistics.median(ordered), 3),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


def run(
    items: int,
    *,
    url: str | None = None,
    queries: int = 200,
    ef_values: Sequence[int] = (40, 64, 100, 200),
    modes: Sequence[str] = ("mirror", "hnsw", "sql"),
    clients: int = 16,
    seconds: float = 30.0,
    sqlite_items: int | None = None,
    keep: Path | None = None,
    embedder: str = "minilm",
    maintenance_work_mem: str = "3GB",
    shared_buffers: str = "1GB",
    small: int | None = None,
    hnsw: dict[str, int] | None = None,
    rebuild_hnsw: bool = False,
    log: Log = _log,
) -> dict[str, Any]:
    """Every phase (see the module) at ``items`` chunks; the report."""
    from ..embed import load_embedder

    report: dict[str, Any] = {"items": items, "data": _data_note()}
    server = pgserver.start(url, keep=keep, shared_buffers=shared_buffers)
    report["server"] = {"embedded": server.admin is not None, **server.settings}
    log(f"server up: {server.settings}")
    try:
        small = max(items // 100, 1000) if small is None else small
        corpus = Corpus(items + small)
        asked, vectors = corpus.queries(queries)
        model = _NoEmbedder() if embedder == "none" else load_embedder(embedder)
        report["embedder"] = model.name
        report["query_embedding_ms"] = _embed_times(model, asked)
        if server.admin is not None:  # our server: migrate with room to build the index
            report["migrated"] = migrate_with(server.app, maintenance_work_mem, log)
        index = _open(server.app, f"bench-{items}", log)
        _forget_written(index)  # what an interrupted run wrote
        report["load"] = load(index, corpus, 0, items, server, maintenance_work_mem, log,
                              hnsw=hnsw, rebuild=rebuild_hnsw)  # fmt: skip
        report["sizes"] = sizes(server.app)
        exact = _exact(index, vectors, 10)
        report["recall"] = _recall(index, vectors, exact, ef_values, log)
        report["search"] = _search(index, model, asked, vectors, modes, log)
        tidy = url is not None and keep is None
        report["tenants"] = _tenants(server.app, corpus, items, small, model, log, tidy=tidy)
        report["concurrency"] = _concurrency(
            index, model, corpus, asked, vectors, clients, seconds, log
        )
        if url is not None and keep is None:  # a database the bench did not make: tidy
            index.drop()
        index.close()
        del index
        gc.collect()
        count = items if sqlite_items is None else min(sqlite_items, items)
        if count:
            report["file_backend"] = _sqlite(corpus, count, model, asked, vectors, log)
        report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    finally:
        server.stop()  # a kept server's folder stays
    return report


class _NoEmbedder:
    """``--embedder none``: searches without a query embedding's time."""

    name = "none (no query embedding timed)"

    def embed(self, texts: Sequence[str]) -> None:
        return None


def _data_note() -> dict[str, Any]:
    return {
        "text": "synthetic: bigram-chain sentences of English prose (8-24 words) with a topic "
        "word and a Zipf-distributed entity name put in; transcript turns, 200 a file "
        "(every 20th file a semantic note file)",
        "vectors": f"synthetic, NOT embeddings of the text: unit vectors around {CLUSTERS} "
        f"random cluster centres, each cluster spread in its own {SUBSPACE}-dimensional "
        f"subspace plus isotropic noise ({DIM} dimensions)",
        "queries": "a question naming a cluster's topic word and entity; its vector a fresh "
        "draw from that cluster; each search embeds the question with the real embedder "
        "(time included) and then searches with the synthetic vector",
    }


def _embed_times(model: Any, asked: list[Query]) -> dict[str, float]:
    model.embed([asked[0].text])
    times = []
    for query in asked:
        began = time.perf_counter()
        model.embed([query.text])
        times.append((time.perf_counter() - began) * 1000)
    return pct(times)


def _open(url: str, tenant: str, log: Log, search: str = "mirror") -> PostgresIndex:
    from ..postgres.index import PostgresIndex

    began = time.perf_counter()
    index = PostgresIndex(url, tenant, search=search)
    log(f"opened {tenant}: {len(index.chunks)} chunks in {time.perf_counter() - began:.1f} s")
    return index


# -- recall -------------------------------------------------------------------------------


def _exact(index: Index, queries: np.ndarray, k: int) -> list[list[int]]:
    """The exact ``k`` nearest chunk ids of each query (numpy over every vector)."""
    import numpy as np

    best_ids = np.full((len(queries), 0), -1, dtype=np.int64)
    best = np.zeros((len(queries), 0), dtype=np.float32)
    items = list(index.vectors.items())
    for at in range(0, len(items), 50_000):
        part = items[at : at + 50_000]
        ids = np.array([cid for cid, _ in part], dtype=np.int64)
        block = np.frombuffer(b"".join(vec for _, vec in part), dtype=np.float32).reshape(-1, DIM)
        scores = queries @ block.T
        best = np.concatenate([best, scores], axis=1)
        best_ids = np.concatenate([best_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        keep = np.argsort(-best, axis=1)[:, :k]
        best = np.take_along_axis(best, keep, axis=1)
        best_ids = np.take_along_axis(best_ids, keep, axis=1)
    return [row.tolist() for row in best_ids]


def _ann(
    index: PostgresIndex, vector: np.ndarray, limit: int, ef: int, scan: str
) -> tuple[list[int], float]:
    """The HNSW index's ``limit`` nearest as the tenant sees them, by the
    product's statement and settings (``iterative_scan`` given); and the ms."""
    from ..postgres import candidates

    sql, params = candidates.nearest_sql(Filters(include_superseded=True))
    began = time.perf_counter()
    with index._db.transaction(index.tenant, "bench") as conn:  # noqa: SLF001
        candidates.settings(conn, ef)
        conn.execute("SELECT set_config('hnsw.iterative_scan', %s, true)", (scan,))
        rows = conn.execute(sql.encode(), (vector, *params, vector, limit)).fetchall()
    return [int(row[0]) for row in rows], (time.perf_counter() - began) * 1000


def _recall(
    index: PostgresIndex,
    vectors: np.ndarray,
    exact: list[list[int]],
    ef_values: Sequence[int],
    log: Log,
    limits: Sequence[int] = (10, 250),
) -> list[dict[str, Any]]:
    """Per ``ef_search``, iterative scan off and on, and ``LIMIT`` 10 (the bar)
    and 250 (what a search asks for its vector list: 200 candidates and a
    margin): the share of the exact top 10 returned, and the time."""
    out = []
    for limit in limits:
        for scan in ("off", "relaxed_order"):
            for ef in ef_values:
                _ann(index, vectors[0], limit, ef, scan)
                found, times, sizes = [], [], []
                for vector, truth in zip(vectors, exact, strict=True):
                    ids, ms = _ann(index, vector, limit, ef, scan)
                    found.append(len(set(ids) & set(truth[:10])) / 10)
                    times.append(ms)
                    sizes.append(len(ids))
                row = {
                    "limit": limit,
                    "ef_search": ef,
                    "iterative_scan": scan,
                    "recall_at_10": round(statistics.fmean(found), 4),
                    "rows_returned": round(statistics.fmean(sizes), 1),
                    "ms": pct(times),
                }
                log(f"recall {row}")
                out.append(row)
    return out


# -- search -------------------------------------------------------------------------------


def _timed_search(
    index: Index,
    model: Any,
    asked: list[Query],
    vectors: np.ndarray,
    lexical: Lexical,
    matrix: Vectors,
) -> tuple[dict[str, Any], list[list[str]]]:
    """Every query through ``hybrid`` as ``Memory.search`` calls it, the real
    question embedded first (then the synthetic vector used)."""
    parts: dict[str, list[float]] = {"embed": [], "sql": []}

    def embed_as(vector: np.ndarray) -> Callable[[str], np.ndarray]:
        def embed(text: str) -> np.ndarray:
            began = time.perf_counter()
            model.embed([text])
            parts["embed"].append((time.perf_counter() - began) * 1000)
            return vector

        return embed

    source = getattr(index, "candidates", None)
    if source is not None:

        def candidates(*args: Any) -> Any:
            began = time.perf_counter()
            try:
                return source(*args)
            finally:
                parts["sql"].append((time.perf_counter() - began) * 1000)

        index.candidates = candidates  # type: ignore[attr-defined]
    try:
        times, cited = [], []
        for query, vector in zip(asked, vectors, strict=True):
            began = time.perf_counter()
            hits = _hybrid(index, query.text, lexical, embed_as(vector), matrix)
            times.append((time.perf_counter() - began) * 1000)
            cited.append([hit.citation for hit in hits])
    finally:
        if source is not None:
            del index.candidates  # type: ignore[attr-defined]
    return {"ms": pct(times), "embed_ms": pct(parts["embed"]), "sql_ms": pct(parts["sql"])}, cited


def _hybrid(
    index: Index, text: str, lexical: Lexical, embed: Callable[[str], np.ndarray], matrix: Vectors
) -> list[Hit]:
    return hybrid(index, text, 10, FILTERS, lexical=lexical, embed=embed, vectors=matrix,
                  weights=Weights())  # fmt: skip


def _search(
    index: PostgresIndex,
    model: Any,
    asked: list[Query],
    vectors: np.ndarray,
    modes: Sequence[str],
    log: Log,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lexical, matrix = Lexical(), Vectors()
    began = time.perf_counter()
    lexical.warm(index)
    out["bm25_build_s"] = round(time.perf_counter() - began, 1)
    if "mirror" in modes:
        began = time.perf_counter()
        matrix.warm(index, DIM)
        out["matrix_build_s"] = round(time.perf_counter() - began, 1)
    cited: dict[str, list[list[str]]] = {}
    for mode in modes:
        index.search = mode
        count = len(asked) if mode != "sql" else min(len(asked), SQL_QUERIES)  # slow at scale
        _timed_search(index, model, asked[:5], vectors[:5], lexical, matrix)  # warm
        out[mode], cited[mode] = _timed_search(
            index, model, asked[:count], vectors[:count], lexical, matrix
        )
        out[mode]["queries"] = count
        out[mode]["load_average"] = round(os.getloadavg()[0], 2)  # the machine is shared
        log(f"search {mode}: {out[mode]}")
    index.search = "mirror"
    if "mirror" in cited:
        out["top10_overlap_with_mirror"] = {
            mode: round(statistics.fmean(len(set(a) & set(b)) / max(len(b), 1)
                                         for a, b in zip(found, cited["mirror"], strict=False)), 4)
            for mode, found in cited.items() if mode != "mirror"
        }  # fmt: skip
    return out


# -- tenants ------------------------------------------------------------------------------


def _tenants(
    url: str, corpus: Corpus, items: int, small: int, model: Any, log: Log, *, tidy: bool
) -> dict[str, Any]:
    """A small tenant beside the big one, its vectors among the big one's,
    written with the HNSW index in place (the product's ingest on a live index)."""
    index = _open(url, f"bench-{items}-small", log, search="hnsw")
    out: dict[str, Any] = {"chunks": small}
    have = len(index.chunks)
    if have < small:
        began = time.perf_counter()
        for path, chunks in corpus.files(items + have, items + small):
            index.replace(path, chunks, FileState(len(chunks), 0, path))
        out["chunks_per_s"] = round((small - have) / (time.perf_counter() - began))
    missing = sorted(index.unembedded)
    if missing:
        out["with_live_hnsw"] = embed_all(index, corpus, missing, log)
    asked, vectors = _own_queries(corpus, items, small)
    exact = _exact(index, vectors, 10)
    out["recall"] = _recall(index, vectors, exact, (40, 100), log, limits=(10,))
    lexical, matrix = Lexical(), Vectors()
    lexical.warm(index)
    out["search_default"], _ = _timed_search(index, model, asked, vectors, lexical, matrix)
    out["search_default"]["ann_above"] = index.ann_above  # below it: the RAM matrix
    index.ann_above, index.ann_share = 0, 0.0  # what the HNSW index would give this tenant
    fallbacks = 0
    for vector in vectors:
        _, near = index.candidates("x", vector, 200, FILTERS)
        fallbacks += near is None
    out["hnsw_lists_left_short"] = fallbacks
    out["search_hnsw_forced"], _ = _timed_search(index, model, asked, vectors, lexical, matrix)
    log(f"tenants: {out}")
    if tidy:
        index.drop()
    index.close()
    return out


def _own_queries(corpus: Corpus, start: int, count: int) -> tuple[list[Query], np.ndarray]:
    """Queries of the small tenant: vectors drawn near its own chunks' clusters."""
    import numpy as np

    asked, _ = corpus.queries(100, seed=12)
    clusters = corpus._cluster_of[start : start + count]  # noqa: SLF001
    picked = np.random.default_rng(5).choice(clusters, len(asked))
    vectors = corpus._draw(picked, (corpus.seed, 3))  # noqa: SLF001
    return asked, vectors


# -- concurrency --------------------------------------------------------------------------


def _concurrency(
    index: PostgresIndex,
    model: Any,
    corpus: Corpus,
    asked: list[Query],
    vectors: np.ndarray,
    clients: int,
    seconds: float,
    log: Log,
    mode: str = "hnsw",
) -> dict[str, Any]:
    """``clients`` threads on one index for ``seconds``: 4 searches to 1 write."""
    index.search = mode
    lexical, matrix = Lexical(), Vectors()
    lexical.warm(index)
    lock = threading.Lock()
    times: dict[str, list[float]] = {"search": [], "write": []}
    errors: list[str] = []
    stop = time.monotonic() + seconds
    fresh = corpus.chunks(0, 5)
    drawn = corpus.vectors(0, 5)  # a written chunk's vector: one like the corpus's

    def client(number: int) -> None:
        rng = random.Random(number)
        written = 0
        while time.monotonic() < stop:
            began = time.perf_counter()
            try:
                if rng.random() < 0.2:
                    kind = "write"
                    path = f"{WRITTEN}{number}-{written}.jsonl"
                    chunks = [dataclasses.replace(c, path=path) for c in fresh]
                    ids = index.replace(path, chunks, FileState(5, 0, path))
                    index.set_vectors(MODEL, {cid: drawn[n].tobytes()
                                              for n, cid in enumerate(ids)})  # fmt: skip
                    written += 1
                else:
                    kind = "search"
                    at = rng.randrange(len(asked))
                    embed = _fixed(model, vectors[at])
                    _hybrid(index, asked[at].text, lexical, embed, matrix)
            except Exception as exc:  # noqa: BLE001 - counted, reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                times[kind].append((time.perf_counter() - began) * 1000)

    began = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    index.search = "mirror"
    _forget_written(index)
    out = {
        "clients": clients,
        "mode": mode,
        "seconds": round(elapsed, 1),
        "ops_per_s": round((len(times["search"]) + len(times["write"])) / elapsed, 1),
        "searches": len(times["search"]),
        "writes": len(times["write"]),
        "search_ms": pct(times["search"]),
        "write_ms": pct(times["write"]),
        "errors": len(errors),
        "first_errors": errors[:3],
    }
    log(f"concurrency: {out}")
    return out


def _forget_written(index: PostgresIndex) -> None:
    """Take the concurrency phase's files out again (a kept server stays as loaded)."""
    with index.transaction():
        for path in [path for path in index.files if path.startswith(WRITTEN)]:
            index.replace(path, [], None)


def _fixed(model: Any, vector: np.ndarray) -> Callable[[str], np.ndarray]:
    def embed(text: str) -> np.ndarray:
        model.embed([text])
        return vector

    return embed


# -- the file backend ---------------------------------------------------------------------


def _sqlite(
    corpus: Corpus,
    count: int,
    model: Any,
    asked: list[Query],
    vectors: np.ndarray,
    log: Log,
) -> dict[str, Any]:
    from ..index.sqlite import Index as SqliteIndex

    out: dict[str, Any] = {"chunks": count}
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-sqlite-") as folder:
        index = SqliteIndex(Path(folder) / "index.sqlite")
        try:
            began = time.perf_counter()
            for path, chunks in corpus.files(0, count):
                index.replace(path, chunks, FileState(len(chunks), 0, path))
            out["chunks_per_s"] = round(count / (time.perf_counter() - began))
            out.update(embed_all(index, corpus, sorted(index.unembedded), log))
            lexical, matrix = Lexical(), Vectors()
            began = time.perf_counter()
            lexical.warm(index)
            matrix.warm(index, DIM)
            out["warm_s"] = round(time.perf_counter() - began, 1)
            _timed_search(index, model, asked[:5], vectors[:5], lexical, matrix)
            out["search"], _ = _timed_search(index, model, asked, vectors, lexical, matrix)
            out["index_mb"] = round((Path(folder) / "index.sqlite").stat().st_size / 2**20)
        finally:
            index.close()
    log(f"file backend: {out}")
    return out
