"""Capture on one author's folder of the corpus, per language and per
category: ``scan`` as it ships (the rules and the learned scorer) and the
rules alone, precision and recall over the five durable categories, scored
per (message, category) as the corpus README defines it. Only counts are
printed, never a message (a held-out set stays unread).

For a folder nobody tuned on (``unseen/``, written blind): the figure issue
17's bar is read against. The tree scanned is the one ``memstrata`` is
imported from: run it with ``PYTHONPATH=OTHER/src`` for another checkout's
rules (scored on this checkout's folder).

Run::

    .venv/bin/python bench/capture_author.py --folder unseen \\
        --json bench/results/capture_unseen.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchutil import emit, machine
from memstrata.capture.scan import scan
from memstrata.capture.scorer import DURABLE

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "capture"
LANGUAGES = ("en", "uz", "ru", "zh")


def score(messages: list[dict[str, Any]], learned: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Precision and recall over ``messages``: all and per language, and per
    durable category (all languages; counts only, no message is shown)."""
    counts = {lang: [0, 0, 0] for lang in (*LANGUAGES, "all")}
    by_category = {category: [0, 0, 0] for category in DURABLE}
    for message in messages:
        got = {entry.category for entry in scan(message["text"], learned=learned)}
        got &= set(DURABLE)
        wanted = set(message["labels"]) & set(DURABLE)
        for key in (message["lang"], "all"):
            counts[key][0] += len(got & wanted)
            counts[key][1] += len(got - wanted)
            counts[key][2] += len(wanted - got)
        for category in DURABLE:
            row = by_category[category]
            row[0] += category in got and category in wanted
            row[1] += category in got and category not in wanted
            row[2] += category in wanted and category not in got
    return _figures(counts), _figures(by_category)


def _figures(counts: dict[str, list[int]]) -> dict[str, Any]:
    return {
        key: {
            "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
            "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
            "tp": tp,
            "fp": fp,
            "fn": fn,
        }
        for key, (tp, fp, fn) in counts.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default="unseen", help="a folder of tests/data/capture")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    folder = CORPUS / args.folder
    if not folder.is_dir():
        sys.exit(f"no corpus folder {folder}")
    messages = [
        json.loads(line)
        for lang in LANGUAGES
        for line in (folder / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    scanned, scanned_by_category = score(messages, learned=True)
    rules, rules_by_category = score(messages, learned=False)
    emit(
        {
            "machine": machine(),
            "folder": args.folder,
            "messages": len(messages),
            "scan": scanned,
            "rules_alone": rules,
            "scan_by_category": scanned_by_category,
            "rules_alone_by_category": rules_by_category,
        },
        args.json,
    )


if __name__ == "__main__":
    main()
