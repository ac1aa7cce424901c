"""``Memory.build_context`` speed at 1k and 100k long-term items.

The items are the templated facts of ``memstrata bench search``; the prompts
are questions about them. At 1k the facts fit their share whole only with a
large budget; with the default budget of this run (1,500 tokens) both sizes
are gated by the prompt. ``after_a_write`` times the call right after a fact
was written (an agent's turn), which the gate catches up with incrementally.
The 100k workspace is built once (``--keep DIR`` reuses it: indexing 100k facts with
embeddings takes minutes).

Run::

    .venv/bin/python bench/bench_context.py --json bench/results/context.json
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine, percentiles
from memstrata import Memory
from memstrata.benchmarks.search_bench import facts

PROMPTS = [
    "Which port does the billing staging database use?",
    "Who leads the search team?",
    "What does Dilnoza prefer for the payments work?",
    "When did Sardor move to Riga?",
]


def measure(folder: Path, items: int, budget: int, calls: int, embedder: str) -> dict[str, Any]:
    with Memory.open(folder, embedder=embedder) as memory:
        have = memory.status().items
        for text in facts(items)[have:]:
            memory.remember(text, category="fact", sync=False)
        memory.flush()
        memory.reindex()
        memory.build_context(PROMPTS[0], budget_tokens=budget)  # warm: model, caches
        rng = random.Random(3)
        times, after_write = [], []
        for _ in range(calls):
            prompt = rng.choice(PROMPTS)
            began = time.perf_counter()
            built = memory.build_context(prompt, budget_tokens=budget)
            times.append((time.perf_counter() - began) * 1000)
        for number in range(calls):  # an agent's turn: a fact is written, then the context built
            memory.remember(f"turn {number}: the billing team met about the launch", sync=False)
            began = time.perf_counter()
            memory.build_context(rng.choice(PROMPTS), budget_tokens=budget)
            after_write.append((time.perf_counter() - began) * 1000)
        return {
            "items": items,
            "tokens": built.tokens,
            **percentiles(times),
            "after_a_write": percentiles(after_write),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="where the 100k workspace is (or goes)")
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": machine(),
        "budget": args.budget,
        "embedder": args.embedder,
    }
    with tempfile.TemporaryDirectory() as tmp:
        small = measure(Path(tmp) / "1k", 1000, args.budget, args.calls, args.embedder)
        large_dir = args.keep or Path(tmp) / "100k"
        large = measure(large_dir, 100_000, args.budget, args.calls, args.embedder)
    report["build_context_ms"] = {"1000": small, "100000": large}
    report["ratio_100k_1k"] = round(large["p50"] / small["p50"], 2)
    emit(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
