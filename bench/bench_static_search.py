"""Search latency, MiniLM against the static table, interleaved query by query.

On a shared machine two ``memstrata bench search`` runs one after the other
see different loads; this opens two kept 100k workspaces (built by
``memstrata bench search --items 100000 --embedder E --keep DIR``) in one
process, warms both (``reindex(warm=True)``), then asks each question of
``bench search`` (the same seeded questions) of both, alternating which goes
first, so that both sides meet the same load. Per side: the whole
``Memory.search(q, k=10)`` (query embedding included) and the query's
embedding alone (``embed([q])``, timed right after), p50 / p99 in ms; the
load average before and after.

Run::

    .venv/bin/python bench/bench_static_search.py --minilm /tmp/ws_minilm_100k \\
        --static /tmp/ws_static_100k --queries 400 --json bench/results/search_100k_static.json
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine
from memstrata.benchmarks.search_bench import _QUESTIONS, _fill
from memstrata.embed import load_embedder
from memstrata.memory import Memory


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p99": round(ordered[max(int(len(ordered) * 0.99) - 1, 0)], 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minilm", type=Path, required=True, help="a kept MiniLM workspace")
    parser.add_argument("--static", type=Path, required=True, help="a kept static workspace")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": machine(),
        "load_avg_before": [round(x, 2) for x in os.getloadavg()],
    }
    sides = {"minilm": args.minilm, "static": args.static}
    memories = {name: Memory.open(folder, embedder=name) for name, folder in sides.items()}
    embedders = {name: load_embedder(name) for name in sides}
    try:
        for memory in memories.values():
            memory.reindex(warm=True)
        rng = random.Random(11)
        asked = [_fill(rng.choice(_QUESTIONS), rng) for _ in range(args.queries)]
        for name, memory in memories.items():
            memory.search(asked[0])
            report[f"{name}_chunks"] = memory.index_status()["chunks"]
        search: dict[str, list[float]] = {name: [] for name in sides}
        embed: dict[str, list[float]] = {name: [] for name in sides}
        for number, question in enumerate(asked):
            order = list(sides) if number % 2 == 0 else list(reversed(sides))
            for name in order:
                began = time.perf_counter()
                memories[name].search(question, k=10)
                search[name].append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                embedders[name].embed([question])
                embed[name].append((time.perf_counter() - began) * 1000)
        for name in sides:
            report[name] = {
                "embedder": embedders[name].name,
                "search_ms": _summary(search[name]),
                "query_embedding_ms": _summary(embed[name]),
            }
    finally:
        for memory in memories.values():
            memory.close()
    report["queries"] = args.queries
    report["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    emit(report, args.json)


if __name__ == "__main__":
    main()
