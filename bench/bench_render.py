"""How long rendering MEMORY.md takes for a workspace's facts: the
long-term store's rendering (with each fact's line where the tree has it,
``LongTermStore.render_lines``; else ``markdown.render`` alone), median of
``--rounds`` calls, in milliseconds. Opens the workspace read-only.

Run (another tree: ``PYTHONPATH=OLD/src``)::

    .venv/bin/python bench/bench_render.py /tmp/ws_minilm_100k --json /tmp/render.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchutil import emit, machine
from memstrata import Memory
from memstrata.stores import markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with Memory.open(args.workspace, embedder="none", read_only=True) as memory:
        store = memory.engine.store
        lines = getattr(store, "render_lines", None)
        render = lines if lines is not None else lambda: markdown.render(store.items.values())
        times = []
        for _ in range(args.rounds):
            began = time.perf_counter()
            render()
            times.append((time.perf_counter() - began) * 1000)
        report = {
            "machine": machine(),
            "facts": len(store.items),
            "what": "LongTermStore.render_lines" if lines is not None else "markdown.render",
            "median_ms": round(statistics.median(times), 1),
        }
    emit(report, args.json)


if __name__ == "__main__":
    main()
