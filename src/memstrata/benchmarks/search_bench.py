"""``memstrata bench search``: hybrid search latency over N realistic chunks.

The chunks are long-term facts written from templates (people, places,
projects, tools, numbers and dates combined), not random letters, so BM25
posting lists and vector neighbourhoods look like a real memory's. The
queries are questions about those facts. Latency covers the whole
``Memory.search`` call, the query's embedding included; ``after_a_write``
times a search right after a fact was written (an agent's turn: the index
takes the new fact in, and embeds it, first).
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..memory import Memory

__all__ = ["facts", "run"]

_PEOPLE = ["Dilnoza", "Sardor", "Aziz", "Malika", "Timur", "Olga", "Wei", "Lena", "Omar", "Nadia"]
_PLACES = ["Tashkent", "Samarkand", "Berlin", "Lisbon", "Almaty", "Seoul", "Austin", "Riga"]
_PROJECTS = ["billing", "search", "checkout", "analytics", "onboarding", "payments", "mobile app"]
_TOOLS = ["Postgres", "Redis", "Kafka", "Go", "Python", "Rust", "React", "Terraform", "Docker"]
_TEMPLATES = [
    "{p} leads the {j} team and works from {c}",
    "The {j} service runs on {t} {n}.{m} in the {c} data centre",
    "{p} prefers {t} over {u} for the {j} work",
    "The staging database of {j} listens on port {port}",
    "{p} moved from {c} to {d} in {month} {year}",
    "We decided to migrate {j} to {t} before the {month} release",
    "{p}'s birthday is on {day} {month}",
    "The {j} budget for {year} is {n}{m}0k dollars",
    "Remember that {p} is allergic to peanuts",
    "{p} and {q} pair on the {j} code review every {weekday}",
]
_QUESTIONS = [
    "Who leads the {j} team?",
    "Which port does the {j} staging database use?",
    "What does {p} prefer for {j}?",
    "When did {p} move to {d}?",
    "What is the {j} budget for {year}?",
    "Where does the {j} service run?",
    "When is {p}'s birthday?",
]
_MONTHS = ["January", "March", "May", "July", "September", "November"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        p=rng.choice(_PEOPLE),
        q=rng.choice(_PEOPLE),
        c=rng.choice(_PLACES),
        d=rng.choice(_PLACES),
        j=rng.choice(_PROJECTS),
        t=rng.choice(_TOOLS),
        u=rng.choice(_TOOLS),
        n=rng.randint(1, 9),
        m=rng.randint(0, 9),
        port=rng.randint(1024, 65000),
        month=rng.choice(_MONTHS),
        year=rng.randint(2019, 2027),
        day=rng.randint(1, 28),
        weekday=rng.choice(_DAYS),
    )


def facts(count: int, seed: int = 7) -> list[str]:
    """``count`` distinct fact sentences."""
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < count:
        text = _fill(rng.choice(_TEMPLATES), rng)
        out.setdefault(f"{text} (note {len(out)})" if text in out else text)
    return list(out)


def _projection_agreement(memory: Memory, questions: list[str]) -> float | None:
    """How much of the exact top 300 by cosine the matrix's ``top`` returns."""
    import numpy as np

    state = memory._search._searcher()  # noqa: SLF001
    vectors, index, embedder = state.vectors, state.index, state.embedder
    if embedder is None or not vectors.projected:
        return None
    ids = np.array(list(index.vectors), dtype=np.int64)
    matrix = np.stack([np.frombuffer(index.vectors[cid], dtype=np.float32) for cid in ids])
    shares = []
    for vector in embedder.embed(questions):
        exact = set(ids[np.argpartition(-(matrix @ vector), 299)[:300]].tolist())
        found = {cid for cid, _ in vectors.top(index, vector, 300)}
        shares.append(len(exact & found) / 300)
    return round(float(np.mean(shares)), 4)


def run(
    items: int,
    *,
    queries: int = 200,
    embedder: str = "minilm",
    workspace: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Build (or reuse) a workspace of ``items`` facts and time ``queries`` searches."""
    folder = workspace or Path(tempfile.mkdtemp(prefix="memstrata-bench-search-"))
    try:
        ingest: dict[str, float] = {}
        with Memory.open(folder, embedder=embedder) as memory:
            have = memory.status().items
            if have < items:
                started = time.perf_counter()
                for number, text in enumerate(facts(items)[have:], start=have + 1):
                    memory.remember(text, category="fact", sync=False)
                    if progress is not None and number % 1000 == 0:
                        progress("facts", number, items)
                memory.flush()
                ingest["write_s"] = round(time.perf_counter() - started, 3)
            started = time.perf_counter()
            report = memory.reindex(progress=progress)
            ingest["index_s"] = round(time.perf_counter() - started, 3)
            rng = random.Random(11)
            asked = [_fill(rng.choice(_QUESTIONS), rng) for _ in range(queries)]
            memory.search(asked[0])  # warm: the query embedder's first run
            times, after_write = [], []
            for question in asked:
                began = time.perf_counter()
                memory.search(question, k=10)
                times.append((time.perf_counter() - began) * 1000)
            for number, question in enumerate(asked):  # an agent's turn: write, then search
                memory.remember(f"bench turn {number}: {question}", sync=False)
                began = time.perf_counter()
                memory.search(question, k=10)
                after_write.append((time.perf_counter() - began) * 1000)
            after_write.sort()
            agreement = _projection_agreement(memory, asked[:50])
        times.sort()
        return {
            "items": items,
            "chunks": report.chunks,
            "mode": "hybrid" if report.vectors else "bm25",
            "embedder": report.embedder,
            "queries": queries,
            "latency_ms": {
                "p50": round(statistics.median(times), 3),
                "p99": round(times[max(int(len(times) * 0.99) - 1, 0)], 3),
            },
            "after_a_write_ms": {
                "p50": round(statistics.median(after_write), 3),
                "p99": round(after_write[max(int(len(after_write) * 0.99) - 1, 0)], 3),
            },
            "ingest_s": ingest,
            # share of the exact 300 nearest vectors the projected first pass
            # also returns (1.0 = exact; null below the projection threshold)
            "vector_agreement": agreement,
        }
    finally:
        if workspace is None:
            shutil.rmtree(folder, ignore_errors=True)
