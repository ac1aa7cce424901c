"""A learned re-ranking of hybrid search's head, measured leave-one-conversation-out
on LoCoMo (issue 16's "a small learning-to-rank model over features you
already compute ... trained with the cross-validation above").

For every conversation of ``--data``: a fresh workspace (``bench locomo``'s
ingest, MiniLM), every question of categories 1-4 searched once with
``k = --head`` and ``Why`` (the parts and factors that made each hit's
score), and each hit's features written to ``--cache`` (so that models are
tried without searching again). Then, for each held-out conversation, a
logistic regression (numpy, L2) is fitted on the other four's hits (label:
the hit's dialogue id is evidence of its question) and the held-out head is
re-ranked by it (and, pairwise, one fitted on relevant-minus-other pairs);
recall@5 / @10 and session_recall@5 are averaged over the
five folds (each conversation counts once, as ``bench locomo --cv`` does),
beside the same figures for the head in hybrid's own order.

Run::

    .venv/bin/python bench/ltr_locomo.py --data ../shared/data/locomo/locomo_dev.json \\
        --cache /tmp/ltr.json --json bench/results/ltr_locomo.json
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchutil import emit, machine
from memstrata import Memory
from memstrata.benchmarks.locomo import OVERALL_CATEGORIES, load, session_hit
from memstrata.benchmarks.retrievers import record_conversation
from memstrata.index.why import Explanation, Why

FACTOR_KINDS = ("speaker", "asks for", "written on", "source")


def features(rank: int, hit: Explanation, head: int) -> list[float]:
    """One hit's features: its parts, ranks, raw scores and each factor (log)."""
    missing = math.log1p(10 * head)
    kinds = dict.fromkeys(FACTOR_KINDS, 0.0)
    for name, times in hit.factors:
        for kind in FACTOR_KINDS:
            if kind in name:
                kinds[kind] += math.log(times)
    return [
        math.log(max(hit.score, 1e-9)),
        hit.bm25,
        hit.vector,
        hit.context,
        math.log1p(hit.bm25_rank) if hit.bm25_rank else missing,
        math.log1p(hit.vector_rank) if hit.vector_rank else missing,
        hit.vector_score or 0.0,
        hit.bm25_score or 0.0,
        float(hit.bm25_rank is not None and hit.vector_rank is not None),
        math.log1p(rank),
        *kinds.values(),
    ]


NAMES = [
    "log score",
    "bm25 part",
    "vector part",
    "context",
    "log bm25 rank",
    "log vector rank",
    "cosine",
    "bm25 raw",
    "in both lists",
    "log rank",
    *(f"factor {kind}" for kind in FACTOR_KINDS),
]


def collect(data: Path, head: int) -> list[dict[str, Any]]:
    """Every conversation's questions with their head's features and dialogue ids."""
    out = []
    for conversation in load(data):
        began = time.perf_counter()
        folder = Path(tempfile.mkdtemp(prefix="memstrata-ltr-"))
        try:
            with Memory.open(folder / "ws", embedder="minilm", session_max_turns=0) as memory:
                dia_of = record_conversation(memory, conversation)
                asked = []
                for question in conversation.questions:
                    if question.category not in OVERALL_CATEGORIES or not question.evidence:
                        continue
                    why = Why()
                    hits = memory.search(question.text, k=head, layers=("transcripts",), why=why)
                    rows = []
                    for rank, (hit, explained) in enumerate(zip(hits, why.hits, strict=True)):
                        dia = dia_of.get((hit.ref or "").partition("#")[0])
                        if dia is not None:
                            rows.append((dia, features(rank, explained, head)))
                    asked.append({"evidence": list(question.evidence), "hits": rows})
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(
            f"{conversation.sample_id}: {len(asked)} questions in "
            f"{time.perf_counter() - began:.0f} s",
            file=sys.stderr,
        )
        out.append({"sample_id": conversation.sample_id, "questions": asked})
    return out


def fit(x: np.ndarray, y: np.ndarray, l2: float, steps: int = 400) -> np.ndarray:
    """Logistic regression by Newton's method (features standardised by the caller)."""
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) / len(y) + l2 * w
        hess = (x.T * (p * (1 - p))) @ x / len(y) + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def design(questions: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for q in questions:
        wanted = set(q["evidence"])
        for dia, row in q["hits"]:
            xs.append(row)
            ys.append(1.0 if dia in wanted else 0.0)
    return np.array(xs), np.array(ys)


def figures(questions: list[dict[str, Any]], order: Any) -> dict[str, float]:
    r5 = r10 = s5 = 0.0
    for q in questions:
        found = list(dict.fromkeys(dia for dia, _ in order(q["hits"])))
        wanted = set(q["evidence"])
        r5 += len(wanted.intersection(found[:5])) / len(wanted)
        r10 += len(wanted.intersection(found[:10])) / len(wanted)
        s5 += session_hit(q["evidence"], found)
    n = len(questions)
    return {"recall@5": r5 / n, "recall@10": r10 / n, "session_recall@5": s5 / n}


def pairs(questions: list[dict[str, Any]], columns: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise design: each relevant hit minus each of its question's first 30
    other hits (label 1), and the negation (label 0)."""
    xs = []
    for q in questions:
        wanted = set(q["evidence"])
        good = [np.array(row)[columns] for dia, row in q["hits"] if dia in wanted]
        bad = [np.array(row)[columns] for dia, row in q["hits"] if dia not in wanted][:30]
        xs += [g - b for g in good for b in bad]
    x = np.array(xs)
    return np.vstack([x, -x]), np.concatenate([np.ones(len(x)), np.zeros(len(x))])


def cross_validate(
    convs: list[dict[str, Any]], l2: float, columns: list[int], pairwise: bool = False
) -> dict[str, Any]:
    """Leave one conversation out: fit on four, re-rank the fifth's heads.
    Pointwise: logistic on each hit (label: evidence), features standardised,
    a bias; ``pairwise``: logistic on pair differences, scaled, no bias."""
    folds = []
    for held in range(len(convs)):
        train = [q for i, c in enumerate(convs) if i != held for q in c["questions"]]
        test = convs[held]["questions"]
        if pairwise:
            xb, y = pairs(train, columns)
            mean, std = np.zeros(len(columns)), xb.std(axis=0) + 1e-9
            w = np.append(fit(xb / std, y, l2), 0.0)  # no bias: it cancels in a pair
        else:
            x, y = design(train)
            x = x[:, columns]
            mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
            w = fit(np.hstack([(x - mean) / std, np.ones((len(x), 1))]), y, l2)

        def learned(hits: list[Any], w: np.ndarray = w, m: Any = mean, s: Any = std) -> list[Any]:
            if not hits:
                return hits
            f = np.array([row for _, row in hits])[:, columns]
            scores = np.hstack([(f - m) / s, np.ones((len(f), 1))]) @ w
            return [hits[i] for i in np.argsort(-scores, kind="stable")]

        folds.append(
            {
                "held_out": convs[held]["sample_id"],
                "hybrid": figures(test, lambda hits: hits),
                "learned": figures(test, learned),
                "weights": dict(
                    zip([NAMES[c] for c in columns] + ["bias"], w.round(3).tolist(), strict=True)
                ),
            }
        )
    mean_of = {
        kind: {
            key: round(sum(f[kind][key] for f in folds) / len(folds), 4)
            for key in ("recall@5", "recall@10", "session_recall@5")
        }
        for kind in ("hybrid", "learned")
    }
    return {
        "l2": l2,
        "pairwise": pairwise,
        "features": [NAMES[c] for c in columns],
        "mean": mean_of,
        "folds": folds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--head", type=int, default=50, help="hits re-ranked per question")
    parser.add_argument("--cache", type=Path, default=None, help="features kept here")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.cache is not None and args.cache.exists():
        convs = json.loads(args.cache.read_text())
    else:
        convs = collect(args.data, args.head)
        if args.cache is not None:
            args.cache.write_text(json.dumps(convs))
    everything = list(range(len(NAMES)))
    runs = [cross_validate(convs, l2, everything) for l2 in (1e-4, 1e-3, 1e-2, 1e-1)]
    no_rank = [c for c in everything if NAMES[c] not in ("log rank", "log score")]
    runs.append(cross_validate(convs, 1e-3, no_rank))
    runs += [cross_validate(convs, l2, everything, pairwise=True) for l2 in (1e-4, 1e-3, 1e-2)]
    for run in runs:
        print(run["l2"], run["pairwise"], len(run["features"]), run["mean"], file=sys.stderr)
    emit({"machine": machine(), "head": args.head, "runs": runs}, args.json)


if __name__ == "__main__":
    main()
