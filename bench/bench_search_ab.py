"""Search latency of one tree on a kept workspace, with every ranking written
out, for A/B runs against another tree (``PYTHONPATH=OTHER/src``) on a machine
whose load moves: run both alternately, several rounds, compare medians, and
check the rankings are the same (``--compare``).

Opens the workspace read-only (nothing is written, so every run asks the same
index), warms it (``reindex(warm=True)``), then asks the seeded questions of
``memstrata bench search`` (seed 11) with ``k=10``: p50 / p99 / mean of the
whole ``Memory.search`` (query embedding included) and the load average.

Run::

    .venv/bin/python bench/bench_search_ab.py /tmp/ws_static_100k --json /tmp/new.json
    PYTHONPATH=/path/to/main/src .venv/bin/python bench/bench_search_ab.py \\
        /tmp/ws_static_100k --json /tmp/main.json
    .venv/bin/python bench/bench_search_ab.py --compare /tmp/main.json /tmp/new.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

from memstrata.benchmarks.search_bench import _QUESTIONS, _fill
from memstrata.memory import Memory


def run(workspace: Path, queries: int, embedder: str) -> dict[str, object]:
    memory = Memory.open(workspace, embedder=embedder, read_only=True)
    try:
        memory.reindex(warm=True)
        rng = random.Random(11)
        asked = [_fill(rng.choice(_QUESTIONS), rng) for _ in range(queries)]
        memory.search(asked[0])
        times, ranks = [], []
        for question in asked:
            began = time.perf_counter()
            hits = memory.search(question, k=10)
            times.append((time.perf_counter() - began) * 1000)
            ranks.append([(hit.ref or hit.citation, round(hit.score, 9)) for hit in hits])
    finally:
        memory.close()
    times.sort()
    timing = {
        "p50": round(statistics.median(times), 3),
        "p99": round(times[max(int(len(times) * 0.99) - 1, 0)], 3),
        "mean": round(statistics.fmean(times), 3),
        "load": round(os.getloadavg()[0], 2),
    }
    return {"timing": timing, "ranks": ranks}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("workspace", type=Path, nargs="?")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--embedder", default="static")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"))
    parser.add_argument(
        "--openblas-default",
        action="store_true",
        help="leave numpy's OpenBLAS its own threads (blas.WANTED = None), on trees that have it",
    )
    args = parser.parse_args()
    if args.openblas_default:
        from memstrata.index import blas

        blas.WANTED = None
    if args.compare:
        first, second = (json.loads(path.read_text())["ranks"] for path in args.compare)
        differ = sum(a != b for a, b in zip(first, second, strict=True))
        print(json.dumps({"questions": len(first), "rankings_that_differ": differ}))
        return 1 if differ else 0
    if args.workspace is None:
        parser.error("a workspace is needed")
    report = run(args.workspace, args.queries, args.embedder)
    print(json.dumps(report["timing"]))
    if args.json:
        args.json.write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
