"""Recall of each embedding alone on LoCoMo (cosine over the turns, no BM25,
no fusion, nothing tuned): MiniLM, the shipped static table, and the
wordllama l2_supercat 256-d table (read from the wheel with numpy,
``bench/recall_ideas.WordLlama``). Per-conversation mean, categories 1-4.

    nice .venv/bin/python bench/vector_only.py --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from memstrata.benchmarks import locomo
from memstrata.benchmarks.locomo import OVERALL_CATEGORIES
from memstrata.embed import load_embedder
from recall_ideas import WordLlama


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()
    conversations = locomo.load(args.data)
    wl = WordLlama()
    models = {
        "minilm": load_embedder("minilm").embed,
        "static": load_embedder("static").embed,
        "wordllama": wl.embed,
    }
    for name, embed in models.items():
        per_conv = []
        cats: dict[int, list[float]] = defaultdict(list)
        start = time.perf_counter()
        for conv in conversations:
            turns = list(conv.turns())
            texts = [
                f"{t.speaker}: {t.text}" + (f" [shares a photo: {t.caption}]" if t.caption else "")
                for t in turns
            ]
            m = np.asarray(embed(texts), dtype=np.float32)
            qs = [q for q in conv.questions if q.evidence and q.category in OVERALL_CATEGORIES]
            qv = np.asarray(embed([q.text for q in qs]), dtype=np.float32)
            sims = qv @ m.T
            r5, r10 = [], []
            for q, row in zip(qs, sims, strict=True):
                order = [turns[i].dia_id for i in np.argsort(-row)[:10]]
                want = set(q.evidence)
                r5.append(len(want & set(order[:5])) / len(want))
                r10.append(len(want & set(order)) / len(want))
                cats[q.category].append(r10[-1])
            per_conv.append((sum(r5) / len(r5), sum(r10) / len(r10)))
        took = time.perf_counter() - start
        n = len(per_conv)
        print(
            name,
            f"recall@5 {sum(p[0] for p in per_conv) / n:.4f}",
            f"@10 {sum(p[1] for p in per_conv) / n:.4f}",
            {c: round(sum(v) / len(v), 4) for c, v in sorted(cats.items())},
            f"{took:.1f}s",
            flush=True,
        )


if __name__ == "__main__":
    main()
