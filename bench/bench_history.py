"""Transcript speed: ``Memory.record_turn`` alone and with the turns embedded
for search.

Turns are the LoCoMo dev utterances when the file is there (real chat lines),
else templated chat lines, each recorded as one turn (user text plus a short
reply), cycled to ``--turns``.

* ``record_turn_ms``: one ``record_turn`` (transcript line, audit lines and
  daily note, each appended and fsynced) on a workspace with embeddings off;
  p50/p99 and turns/s over the whole run.
* ``compaction_by_size``: one session of long turns (~1 KB each) past
  ``session_max_bytes`` (``--size-limit``) while ``session_keep_turns``
  (200) would not fit in it: ``record_turn`` p50/p99 in the first and the
  last quarter of the run (flat: a compaction leaves room below the limit, so
  turns do not each compact again), the compactions done, the file's final
  size and the metadata line's, and the notices left;
* ``open_ms``: ``Memory.open`` of that workspace, its transcripts known good
  (the usual case) and with that record deleted (every transcript read);
* ``with_embeddings``: the same turns, then ``reindex`` (chunking and
  embedding every new message with the local MiniLM model, in batches):
  turns/s over recording plus indexing; and ``search_after_each_ms``: a turn
  recorded and then found by a search right away (the turn's messages are
  embedded one turn at a time), p50 per turn over ``--immediate`` turns.

Run::

    .venv/bin/python bench/bench_history.py --json bench/results/history.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine, percentiles
from memstrata import Memory

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
TEMPLATES = [
    "I went hiking near {p} last weekend and the view was amazing",
    "Can you remind me what we decided about the {p} release?",
    "My sister just moved to {p}, she loves the food there",
    "We should migrate the {p} service to Postgres next sprint",
]
PLACES = ["Tashkent", "Lisbon", "Seoul", "Riga", "Austin", "billing", "search"]


def lines(count: int) -> list[str]:
    texts: list[str] = []
    if LOCOMO.exists():
        for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
            conversation = sample["conversation"]
            for key, value in conversation.items():
                if key.startswith("session_") and isinstance(value, list):
                    texts += [turn["text"] for turn in value if turn.get("text")]
    if not texts:
        texts = [t.format(p=p) for t in TEMPLATES for p in PLACES]
    return [texts[i % len(texts)] for i in range(count)]


def record(folder: Path, texts: list[str], embedder: str) -> tuple[list[float], float]:
    times = []
    with Memory.open(folder, embedder=embedder, session_max_turns=0) as memory:
        started = time.perf_counter()
        for number, text in enumerate(texts):
            began = time.perf_counter()
            memory.record_turn(f"bench-{number // 500}", user=text, assistant="I see.")
            times.append((time.perf_counter() - began) * 1000)
        total = time.perf_counter() - started
    return times, total


def by_size(folder: Path, texts: list[str], limit: int) -> dict[str, Any]:
    """Turns of ~1 KB into one session whose kept turns pass ``limit`` bytes."""
    times = []
    with Memory.open(
        folder, embedder="none", session_max_bytes=limit, session_summary_tokens=0
    ) as memory:
        for number, text in enumerate(texts):
            long_text = f"{number}: " + (text + " ") * max(1, 1000 // max(len(text), 1))
            began = time.perf_counter()
            memory.record_turn("big", user=long_text, assistant="I see.")
            times.append((time.perf_counter() - began) * 1000)
        notices = len(memory.status().notices)
    transcript = folder / "sessions" / "big.jsonl"
    meta_line = transcript.read_bytes().split(b"\n", 1)[0]
    entries = json.loads(meta_line).get("compactions", [])
    quarter = max(len(times) // 4, 1)
    return {
        "limit_bytes": limit,
        "first_quarter_ms": percentiles(times[:quarter]),
        "last_quarter_ms": percentiles(times[-quarter:]),
        "compactions": sum(entry.get("merged", 1) for entry in entries),
        "compactions_listed": len(entries),
        "file_bytes": transcript.stat().st_size,
        "meta_line_bytes": len(meta_line),
        "notices": notices,
    }


def opening(folder: Path) -> dict[str, float]:
    """``Memory.open`` of a workspace with transcripts: when they are known good
    (the usual case), and when that record is gone (every transcript read)."""
    verified = folder / ".memstrata" / "transcripts-verified.json"
    Memory.open(folder, embedder="none").close()  # warm: imports, page cache
    times: dict[str, list[float]] = {"known_good": [], "read_all": []}
    for _ in range(5):
        for name in ("read_all", "known_good"):  # each read_all open records them good again
            if name == "read_all":
                verified.unlink(missing_ok=True)
            began = time.perf_counter()
            Memory.open(folder, embedder="none").close()
            times[name].append((time.perf_counter() - began) * 1000)
    return {name: round(statistics.median(values), 2) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--immediate", type=int, default=200)
    parser.add_argument("--size-limit", type=int, default=100_000)
    parser.add_argument("--size-turns", type=int, default=1000)
    parser.add_argument("--only-size", action="store_true", help="measure compaction_by_size alone")
    args = parser.parse_args()
    texts = lines(args.turns)
    report: dict[str, Any] = {
        "machine": machine(),
        "turns": len(texts),
    }
    with tempfile.TemporaryDirectory() as tmp:
        report["compaction_by_size"] = by_size(
            Path(tmp) / "by-size", lines(args.size_turns), args.size_limit
        )
        if args.only_size:
            emit(report, args.json)
            return
        times, total = record(Path(tmp) / "plain", texts, "none")
        report["record_turn_ms"] = {
            **percentiles(times),
            "turns_per_s": round(len(texts) / total, 1),
        }
        report["open_ms"] = opening(Path(tmp) / "plain")

        folder = Path(tmp) / "embedded"
        _, recorded = record(folder, texts, "minilm")
        with Memory.open(folder, session_max_turns=0) as memory:
            started = time.perf_counter()
            indexed = memory.reindex()
            indexing = time.perf_counter() - started
        report["with_embeddings"] = {
            "turns_per_s": round(len(texts) / (recorded + indexing), 1),
            "record_s": round(recorded, 3),
            "index_s": round(indexing, 3),
            "chunks": indexed.chunks,
            "vectors": indexed.vectors,
            "embedder": indexed.embedder,
        }
        each = []
        with Memory.open(Path(tmp) / "immediate", session_max_turns=0) as memory:
            memory.search("warm up")
            for number, text in enumerate(texts[: args.immediate]):
                began = time.perf_counter()
                memory.record_turn("now", user=text, assistant="I see.")
                memory.search(text[:40] or "x", k=1)
                each.append((time.perf_counter() - began) * 1000)
                if number == 0:
                    each.clear()  # the first search also loads the model
        report["search_after_each_ms"] = percentiles(each)
    emit(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
