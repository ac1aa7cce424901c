"""The relevance floor on small indexes: an unrelated query's best cosine among n chunks.

A search returns nothing unless its best keyword match or its best cosine
reaches a floor (docs/search.md, "Relevance floor"). The best cosine of a
query about nothing the memory holds grows with the number of vectors it is
compared with, so one floor set on LoCoMo's conversations (~1,000 chunks) is
far above what an unrelated query reaches in a workspace of ten facts, where
it then turns away paraphrases that do belong ("what language" against
"preference: Please always answer in German." has cosine 0.34 with MiniLM).

This script measures, for each ``n`` in 1, 2, 4 … 512: random subsets of
``n`` turns of a LoCoMo conversation (``Speaker: text``, as the index embeds
a transcript line), the best cosine of each of the 200 unrelated queries of
``benchmarks/unrelated.py`` among them, 40 subsets per conversation and ``n``;
its 99th percentile against ``ln n`` is close to a line. It fits
``a + b ln n`` on four conversations and counts, on the fifth, how many of
the unrelated queries' subsets reach the fitted value (the held-out false-hit
rate, target about 1 %), for each of the five; then fits on all five: the
constants the engine uses (``index/relevance.py``, ``SMALL_INDEX_FLOORS``).
LoCoMo's questions are not read: nothing here looks at what is relevant.

Run::

    .venv/bin/python bench/bench_floor.py --data ../shared/data/locomo/locomo_dev.json \
        --json bench/results/floor.json
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchutil import emit, machine
from memstrata.benchmarks import locomo
from memstrata.benchmarks.unrelated import UNRELATED
from memstrata.embed import load_embedder
from memstrata.index import windows
from memstrata.index.hybrid import Weights
from memstrata.index.relevance import FLOOR_OFFSETS

SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
SUBSETS = 40
QUANTILE = 0.99


def _best_cosines(scores: np.ndarray, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """Per size n: the best cosine of every query in each of ``SUBSETS`` random n-subsets."""
    count = scores.shape[1]
    out: dict[int, np.ndarray] = {}
    for n in SIZES:
        if n > count:
            continue
        rows = [
            scores[:, rng.choice(count, size=n, replace=False)].max(axis=1) for _ in range(SUBSETS)
        ]
        out[n] = np.concatenate(rows)
    return out


def _windows(conversation: locomo.Conversation) -> list[str]:
    """Each turn's window (the turn before it, itself, the one after, in its
    session) as ``index.windows.window_text`` builds it; the last turn of a
    session, which waits for a next one: itself."""
    out = []
    for session in conversation.sessions:
        said = [f"{t.speaker}: {t.text}" for t in session.turns]
        for n, text in enumerate(said):
            after = said[n + 1] if n + 1 < len(said) else None
            window = windows.window_of(said[n - 1] if n else None, text, after)
            out.append(text if window is None else window)
    return out


def _fit(per_size: dict[int, list[np.ndarray]]) -> tuple[float, float]:
    """``(a, b)`` of the line ``a + b ln n`` through the sizes' 99th percentiles."""
    sizes = sorted(per_size)
    x = np.log(np.array(sizes, dtype=float))
    y = np.array([np.quantile(np.concatenate(per_size[n]), QUANTILE) for n in sizes])
    slope, intercept = np.polyfit(x, y, 1)
    return float(intercept), float(slope)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo_dev.json"))
    parser.add_argument("--embedder", default="minilm", help="the embedder to measure")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument(
        "--context-vectors",
        type=float,
        default=None,
        help="each turn's vector mixed with its window's by this weight, as the index "
        "stores it (index/windows.py; default: the embedder's, windows.DEFAULTS)",
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        sys.exit(f"no LoCoMo file at {args.data} (give --data)")
    embedder = load_embedder(args.embedder)
    queries = embedder.embed(list(UNRELATED))
    rng = np.random.default_rng(0)
    conversations = locomo.load(args.data)
    best: list[dict[int, np.ndarray]] = []
    weight = windows.weight_for(args.context_vectors, args.embedder)
    for conversation in conversations:
        texts = [f"{t.speaker}: {t.text}" for s in conversation.sessions for t in s.turns]
        vectors = embedder.embed(texts)
        if weight:
            vectors = windows.mix(vectors, embedder.embed(_windows(conversation)), weight)
        best.append(_best_cosines(queries @ vectors.T, rng))
    folds = []
    for held, conversation in enumerate(conversations):
        train: dict[int, list[np.ndarray]] = {}
        for i, sizes in enumerate(best):
            if i != held:
                for n, values in sizes.items():
                    train.setdefault(n, []).append(values)
        a, b = _fit(train)
        rates = {
            str(n): round(float((v >= a + b * math.log(n)).mean()), 4)
            for n, v in best[held].items()
        }
        folds.append(
            {
                "held_out": conversation.sample_id,
                "a": round(a, 4),
                "b": round(b, 4),
                "false_hits": rates,
            }
        )
    everything: dict[int, list[np.ndarray]] = {}
    for sizes in best:
        for n, values in sizes.items():
            everything.setdefault(n, []).append(values)
    a, b = _fit(everything)
    floor = Weights().floor_vector + FLOOR_OFFSETS.get(embedder.name, 0.0)  # per embedder
    quantiles = {
        str(n): round(float(np.quantile(np.concatenate(v), QUANTILE)), 4)
        for n, v in sorted(everything.items())
    }
    held_rates = [rate for fold in folds for rate in fold["false_hits"].values()]
    report: dict[str, Any] = {
        "machine": machine(),
        "embedder": embedder.name,
        "vectors": windows.model_name(embedder.name, weight),
        "queries": len(UNRELATED),
        "subsets_per_size": SUBSETS,
        "quantile": QUANTILE,
        "p99_best_cosine_by_size": quantiles,
        "fit_all": {"a": round(a, 4), "b": round(b, 4)},
        # where the line reaches the default floor (plus the model's offset)
        "crosses_at": round(math.exp((floor - a) / b)) if b > 0 else None,
        "leave_one_out": folds,
        "held_out_false_hits_mean": round(float(np.mean(held_rates)), 4),
        "held_out_false_hits_max": round(float(np.max(held_rates)), 4),
    }
    emit(report, args.json)


if __name__ == "__main__":
    main()
