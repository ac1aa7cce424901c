"""Embedding speed: MiniLM int8 on onnxruntime, texts/s by batch size and query latency.

Texts: chat-like sentences built from a small list of templates and slot
values (a seeded ``random.Random``, so every run embeds the same texts), mean
length about 90 characters.

* ``load_s``: ``load_embedder()`` from cold in this process (read + SHA-256 of
  the model, onnxruntime session, tokenizer);
* ``throughput``: for batch sizes 1, 32 and 256, ``--texts`` texts embedded
  ``batch`` at a time after one warm-up batch; ``texts_per_s`` is texts over
  wall time;
* ``query_ms``: ``--queries`` single-text ``embed([q])`` calls, each timed
  alone (perf_counter_ns) after a warm-up, p50/p99/mean in milliseconds.

Run::

    .venv/bin/python bench/bench_embed.py --json bench/results/embed.json
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchutil import emit, machine, percentiles
from memstrata.embed import Embedder, MiniLMEmbedder, load_embedder

TEMPLATES = [
    "I {verb} {thing} {when}, and honestly it {feeling}.",
    "Can you remind me to {task} {when}? I keep forgetting about it.",
    "My {person} just moved to {city} and is looking for {thing}.",
    "We decided to {task} {when} because the old plan {feeling}.",
    "The {system} failed again {when}; the logs say {error}.",
    "Do you remember what I told you about {thing} and my {person}?",
    "I prefer {thing} over {other}, especially {when}.",
    "Quick update: the {system} is fixed, but {error} still shows up {when}.",
    "Please note that my {person} is allergic to {food} and hates {other}.",
    "Last {day} I tried {food} in {city} and it {feeling}.",
]
SLOTS = {
    "verb": ["started", "finished", "bought", "cancelled", "tried", "booked", "sold"],
    "thing": [
        "a new running plan",
        "the yoga class",
        "a cheap flat near the river",
        "the Python course",
        "a second-hand bike",
        "tickets for the concert",
        "a dentist appointment",
    ],
    "other": ["coffee", "long meetings", "spicy food", "the night shift", "crowded trains"],
    "when": [
        "yesterday",
        "next Monday",
        "after the holidays",
        "every morning",
        "this weekend",
        "in March",
    ],
    "feeling": [
        "felt great",
        "was a total mess",
        "went better than expected",
        "made me nervous",
        "was fine",
    ],
    "task": [
        "call the landlord",
        "renew my passport",
        "send the invoice",
        "book the flights",
        "water the plants",
    ],
    "person": ["sister", "manager", "best friend", "neighbour", "grandmother", "son"],
    "city": ["Berlin", "Tashkent", "Lisbon", "Osaka", "Toronto", "Nairobi"],
    "system": ["deploy pipeline", "backup job", "payment service", "search index", "build"],
    "error": [
        "the disk is full",
        "a timeout on the database",
        "permission denied",
        "an expired certificate",
    ],
    "food": ["peanuts", "shellfish", "ramen", "dumplings", "fresh figs"],
    "day": ["Friday", "Sunday", "week", "summer"],
}
BATCH_SIZES = (1, 32, 256)


def chat_texts(count: int, seed: int = 7) -> list[str]:
    """``count`` chat-like sentences, the same ones for the same seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        template = rng.choice(TEMPLATES)
        out.append(template.format(**{k: rng.choice(v) for k, v in SLOTS.items()}))
    return out


def throughput(embedder: Embedder, texts: list[str], batch: int) -> dict[str, float]:
    """Texts per second embedding ``texts`` ``batch`` at a time (after one warm-up batch)."""
    embedder.embed(texts[:batch])
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    elapsed = time.perf_counter() - start
    return {
        "batch": batch,
        "texts": len(texts),
        "seconds": round(elapsed, 3),
        "texts_per_s": round(len(texts) / elapsed, 1),
    }


def query_latency(embedder: Embedder, queries: list[str]) -> dict[str, float]:
    """Milliseconds per single-text call."""
    for query in queries[:20]:
        embedder.embed([query])
    costs = []
    for query in queries:
        start = time.perf_counter_ns()
        embedder.embed([query])
        costs.append((time.perf_counter_ns() - start) / 1e6)
    return percentiles(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--texts", type=int, default=1024, help="texts per batch size")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()

    start = time.perf_counter()
    embedder = load_embedder()
    load_s = time.perf_counter() - start
    texts = chat_texts(args.texts)
    queries = chat_texts(args.queries, seed=11)
    threads = embedder.threads if isinstance(embedder, MiniLMEmbedder) else None
    report: dict[str, Any] = {
        "machine": machine(),
        "cpu_count": os.cpu_count(),
        "onnxruntime": version("onnxruntime"),
        "tokenizers": version("tokenizers"),
        "embedder": embedder.name,
        "dim": embedder.dim,
        "threads": threads,
        "load_s": round(load_s, 3),
        "mean_chars": round(statistics.fmean(len(t) for t in texts), 1),
        "throughput": [throughput(embedder, texts, batch) for batch in BATCH_SIZES],
        "query_ms": query_latency(embedder, queries),
    }
    emit(report, args.json)
    sys.exit(0)


if __name__ == "__main__":
    main()
