"""Capture speed: ``scan`` per message and ``Memory.observe`` with its durable writes.

Messages: the labelled capture corpus (tests/data/capture, four languages)
plus, when the LoCoMo file is there, every dialogue turn of it (real chat
messages, 126 characters on average), cycled to ``--messages`` (10,000).

* ``scan_us``: each message scanned once after a warm-up, timed alone
  (perf_counter_ns), p50/p99 in microseconds; ``scan_200_us`` the same for
  messages cut or joined to exactly 200 characters;
* ``observe_ms``: ``Memory.observe`` on a fresh workspace for ``--observe``
  messages; ``stored`` are the calls that wrote (SESSION-STATE.md fsync plus
  the journal fsync for promoted facts), ``empty`` those that found nothing.

Run::

    .venv/bin/python bench/bench_capture.py --json bench/results/capture.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchutil import emit, machine, percentiles
from memstrata import Memory
from memstrata.capture.scan import scan

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "capture"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def corpus_texts(folders: Iterable[str] = ("",)) -> list[str]:
    """The corpus's messages, in file order: all of them, or those of ``folders``."""
    texts = []
    for path in (p for folder in folders for p in sorted((CORPUS / folder).rglob("*.jsonl"))):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(json.loads(line)["text"])
    return texts


def locomo_texts(path: Path) -> list[str]:
    if not path.exists():
        return []
    texts = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(turn["text"] for turn in turns if turn.get("text"))
    return texts


def time_scan(texts: list[str]) -> dict[str, float]:
    for text in texts[:500]:
        scan(text)
    costs = []
    clock = time.perf_counter_ns
    for text in texts:
        start = clock()
        scan(text)
        costs.append((clock() - start) / 1000)
    return percentiles(costs)


def to_200(texts: list[str], count: int) -> list[str]:
    out, index = [], 0
    while len(out) < count:
        text = texts[index % len(texts)]
        while len(text) < 200:
            index += 1
            text += " " + texts[index % len(texts)]
        out.append(text[:200])
        index += 1
    return out


def time_observe(texts: list[str]) -> dict[str, Any]:
    stored, empty = [], []
    with tempfile.TemporaryDirectory() as folder, Memory.open(folder) as memory:
        for index, text in enumerate(texts):
            start = time.perf_counter_ns()
            captures = memory.observe(text, session=f"s{index % 7}")
            elapsed = (time.perf_counter_ns() - start) / 1e6
            (stored if captures else empty).append(elapsed)
        items = memory.status().items
    return {
        "calls": len(texts),
        "stored": {"calls": len(stored), **percentiles(stored)} if stored else None,
        "empty": {"calls": len(empty), **percentiles(empty)} if empty else None,
        "items_after": items,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--observe", type=int, default=2_000)
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    args = parser.parse_args()
    base = corpus_texts() + locomo_texts(args.locomo)
    texts = [base[i % len(base)] for i in range(args.messages)]
    report = {
        "machine": machine(),
        "messages": len(texts),
        "distinct_messages": len(base),
        "mean_chars": round(statistics.fmean(len(t) for t in texts), 1),
        "scan_us": time_scan(texts),
        "scan_200_us": time_scan(to_200(base, min(args.messages, 5000))),
        "observe_ms": time_observe(texts[: args.observe]),
    }
    emit(report, args.json)
    sys.exit(0)


if __name__ == "__main__":
    main()
