"""What exact citations of fresh facts cost: an agent's turn writes a fact,
then searches for it; the search that first cites a fact written since the
last checkpoint renders MEMORY.md (a checkpoint) to cite its line.

For each size: a workspace of that many facts (``search_bench.facts``),
flushed; then ``--turns`` times: ``remember`` a new fact (not synced), time
the search that finds it (``fresh``), time the same search again (``again``:
nothing left to render). p50 / p99 in milliseconds, and how many checkpoints
the fresh searches ran.

Run::

    .venv/bin/python bench/bench_fresh_citation.py --items 1000 10000 --json /tmp/fresh.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine, percentiles
from memstrata import Memory
from memstrata.benchmarks.search_bench import facts


def measure(items: int, turns: int, embedder: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder, Memory.open(folder, embedder=embedder) as memory:
        for text in facts(items):
            memory.remember(text, sync=False)
        memory.flush()
        memory.search("warm up")
        checkpoint = memory.engine.checkpoint
        ran = [0]

        def counted() -> bool:
            ran[0] += 1
            return checkpoint()

        memory.engine.checkpoint = counted  # type: ignore[method-assign]
        fresh, again = [], []
        for turn in range(turns):
            memory.remember(f"The okapi number {turn} likes turnips", sync=False)
            for times in (fresh, again):
                began = time.perf_counter()
                hits = memory.search(f"okapi number {turn} turnips", k=5)
                times.append((time.perf_counter() - began) * 1000)
                assert hits and hits[0].line_start > 0, "the fresh fact is not cited at a line"
        return {
            "items": items,
            "fresh_ms": percentiles(fresh),
            "again_ms": percentiles(again),
            "checkpoints": ran[0],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--embedder", default="none")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = [measure(items, args.turns, args.embedder) for items in args.items]
    emit({"machine": machine(), "embedder": args.embedder, "runs": runs}, args.json)


if __name__ == "__main__":
    main()
