"""Capture scanner evaluation: precision / recall / F1 of ``scan`` on the labelled corpus.

Scoring is per (message, category), as the corpus README defines it. The
corpus is split by id: "dev" holds the messages with an odd number (the
split the rules were tuned on; ``--errors`` prints its mistakes), "holdout"
the even ones (blind until 2026-11-23, tuned on since), and "blind" the set
in ``tests/data/capture/blind/`` (written from the guide alone by someone who
never saw the rules; never tuned on, ``--errors`` never prints it). ``scan`` runs with script
detection (``languages=None``), as an agent would call it. Timing: the
per-message cost of ``scan`` (the rules alone: ``learned=False``; the learned
scorer, trained on this corpus, is measured by ``bench/capture_cv.py``) over
the whole corpus (timeit, best of
``--repeat``), p50/p99 in microseconds, plus the same for a 200-character
message.

Run::

    .venv/bin/python bench/capture_eval.py --json bench/results/capture_eval.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import timeit
from collections import defaultdict
from pathlib import Path
from typing import Any

from memstrata.capture.scan import CATEGORIES, scan

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "capture"
LANGUAGES = ("en", "uz", "ru", "zh")
SPLITS = ("dev", "holdout", "blind")


def load() -> list[dict[str, Any]]:
    messages = []
    for folder in (CORPUS, CORPUS / "blind"):
        for lang in LANGUAGES:
            path = folder / f"{lang}.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    messages.append(json.loads(line))
    return messages


def split_of(message: dict[str, Any]) -> str:
    number = message["id"].rsplit("-", 1)[1]
    if number.startswith("b"):
        return "blind"
    return "dev" if int(number) % 2 else "holdout"


def prf(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f, 4),
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def evaluate(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    errors = []
    for message in messages:
        split = split_of(message)
        gold = set(message["labels"])
        got = {entry.category for entry in scan(message["text"], learned=False)}
        for category in gold | got:
            slot = 0 if category in gold and category in got else 1 if category in got else 2
            for key in ("overall", f"lang:{message['lang']}", f"cat:{category}"):
                counts[split][key][slot] += 1
            if slot and split != "blind":
                kind = "FP" if slot == 1 else "FN"
                errors.append(f"{kind} {category:15} {message['id']}: {message['text']}")
    report: dict[str, Any] = {}
    for split in SPLITS:
        table = counts[split]
        report[split] = {
            "overall": prf(*table["overall"]),
            "by_language": {lang: prf(*table[f"lang:{lang}"]) for lang in LANGUAGES},
            "by_category": {cat: prf(*table[f"cat:{cat}"]) for cat in CATEGORIES},
        }
    overall = [counts[split]["overall"] for split in SPLITS]
    all_counts = [sum(column) for column in zip(*overall, strict=True)]
    report["all"] = {"overall": prf(*all_counts)}
    return report, errors


def timing(messages: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    def per_message(text: str) -> float:
        number = 200
        best = min(timeit.repeat(lambda: scan(text, learned=False), number=number, repeat=repeat))
        return best / number * 1e6

    costs = sorted(per_message(m["text"]) for m in messages)
    texts = [m["text"] for m in messages if m["lang"] in ("en", "uz")]
    long_texts = []
    for start in range(0, len(texts), 5):
        joined = " ".join(texts[start:])
        long_texts.append(joined[:200])
    long_costs = sorted(per_message(t) for t in long_texts[:40])
    return {
        "corpus_us": {
            "p50": round(statistics.median(costs), 2),
            "p99": round(costs[int(len(costs) * 0.99) - 1], 2),
        },
        "chars200_us": {
            "p50": round(statistics.median(long_costs), 2),
            "p99": round(long_costs[int(len(long_costs) * 0.99) - 1], 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--errors", action="store_true", help="print dev-split errors")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    messages = load()
    report, errors = evaluate(messages)
    if not args.no_timing:
        report["timing"] = timing(messages, args.repeat)
    if args.errors:
        print("\n".join(errors), file=sys.stderr)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
