"""A nested choice among cross-validated capture candidates (round 5).

For each held-out author, the (corpus, training settings) candidate with the
best F1 on the *other* authors' by-author folds is picked, among the candidates
whose precision there is not below the baseline's (the first one given); the
picked candidate's counts on the held-out author are pooled. The figure says
whether choosing by cross-validation beats keeping the baseline, without
picking on the fold that is scored. Authors: those every result holds.

Run, on ``bench/capture_cv.py --json`` results::

    .venv/bin/python bench/capture_nested.py \\
        shipped=bench/results/capture_cv_round5.json \\
        settings=bench/results/capture_cv_round5_settings.json \\
        all=bench/results/capture_cv_round5_settings_all.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

Counts = tuple[int, int, int]


def counts(result: dict[str, Any], author: str) -> Counts:
    got = result[f"author:{author}/scorer"]["overall"]
    return got["tp"], got["fp"], got["fn"]


def total(result: dict[str, Any], authors: list[str]) -> Counts:
    tp = fp = fn = 0
    for author in authors:
        a, b, c = counts(result, author)
        tp, fp, fn = tp + a, fp + b, fn + c
    return tp, fp, fn


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def main(argv: list[str]) -> int:
    runs: dict[str, dict[str, Any]] = {}
    for arg in argv:
        label, _, path = arg.partition("=")
        with open(path, encoding="utf-8") as handle:
            for name, result in json.load(handle)["variants"].items():
                runs[f"{label}:{name}"] = result
    base = next(iter(runs))
    held = [
        {
            k.split(":")[1].split("/")[0]
            for k in r
            if k.startswith("author:") and k.endswith("/scorer")
        }
        for r in runs.values()
    ]
    authors = sorted(set.intersection(*held))
    nested, kept, picks = [0, 0, 0], [0, 0, 0], {}
    for author in authors:
        others = [a for a in authors if a != author]
        floor = prf(*total(runs[base], others))[0]
        best: tuple[float, str] | None = None
        for name, result in runs.items():
            p, _, f1 = prf(*total(result, others))
            if p + 1e-9 >= floor and (best is None or f1 > best[0] + 1e-9):
                best = (f1, name)
        assert best is not None
        picks[author] = best[1]
        for i, x in enumerate(counts(runs[best[1]], author)):
            nested[i] += x
        for i, x in enumerate(counts(runs[base], author)):
            kept[i] += x
    print(f"{len(authors)} authors; baseline {base}")
    print("picks:", json.dumps(picks))
    for label, got in (("nested choice", tuple(nested)), ("baseline", tuple(kept))):
        p, r, f1 = prf(*got)
        print(f"{label + ':':15s}P {p:.3f} / R {r:.3f} / F1 {f1:.3f}")
    for name, result in runs.items():
        p, r, f1 = prf(*total(result, authors))
        print(f"  {name:32s} P {p:.3f} / R {r:.3f} / F1 {f1:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
