"""Query-side term expansion for BM25 from the shipped static table (issue 16,
seventh session): each content word of a question also asks BM25 for its
nearest vocabulary words by the static table's cosine, with a small weight,
so that "veterinarian" also matches "vet" and "painting" "painter" / "art".

Used by ``ctx_ideas.py`` (the ``qexp2`` / ``qexp3`` / ``qexp5`` variants);
nothing in ``src`` changes. The table is ``embed/data/static-minilm-128.bin``
(one row per WordPiece token of MiniLM's vocabulary): a question's word is
expanded only when it is one whole token of that vocabulary (an unknown or
split word is rare, and BM25 already weighs it), is not a speaker's name nor
written with a capital letter inside the question (a name's neighbours are
other names), and has three letters or more. Its neighbours are whole-word
tokens of three letters or more, not function words, not the word's own
stem (Porter, as indexed), found among the 21k such tokens by cosine and
kept per word (``Neighbours.of``: computed once, then a dict look-up).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from memstrata.embed.static import StaticEmbedder
from memstrata.index.lexical import _term  # the indexed form of one word
from memstrata.index.text import STOPWORDS, query_terms

MOST = 8  # neighbours kept per word (the variants read the first 2 / 3 / 5)
_CAPITALISED = re.compile(r"(?<!^)(?<![.?!]\s)\b([A-Z][a-z]+)")


class Neighbours:
    """The nearest whole-word vocabulary tokens of a word, by the static table."""

    def __init__(self) -> None:
        embedder = StaticEmbedder()
        table = embedder._table  # noqa: SLF001 - bench only
        vocab = embedder._tokenizer.get_vocab()  # noqa: SLF001
        self.row_of = {w: i for w, i in vocab.items()}
        words = [
            (w, i)
            for w, i in vocab.items()
            if w.isascii() and w.isalpha() and len(w) >= 3 and w not in STOPWORDS
        ]
        self.words = [w for w, _ in words]
        rows = table[[i for _, i in words]]
        self.matrix = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        self.table = table
        self.cache: dict[str, list[tuple[str, float]]] = {}

    def of(self, word: str) -> list[tuple[str, float]]:
        """Up to ``MOST`` (neighbour, cosine), nearest first ([] for a word
        that is not one whole token)."""
        found = self.cache.get(word)
        if found is not None:
            return found
        row = self.row_of.get(word)
        out: list[tuple[str, float]] = []
        if row is not None:
            v = self.table[row] / np.linalg.norm(self.table[row])
            scores = self.matrix @ v
            top = np.argpartition(-scores, 4 * MOST)[: 4 * MOST]
            own = _term(word)
            for j in top[np.argsort(-scores[top])]:
                other = self.words[j]
                if _term(other) != own:
                    out.append((other, float(scores[j])))
                if len(out) >= MOST:
                    break
        self.cache[word] = out
        return out


_NEIGHBOURS: list[Neighbours] = []


def neighbours() -> Neighbours:
    if not _NEIGHBOURS:
        _NEIGHBOURS.append(Neighbours())
    return _NEIGHBOURS[0]


def expansion(query: str, k: int, speakers: Iterable[str], least: float = 0.0) -> dict[str, float]:
    """The indexed terms to add to ``query``'s BM25 terms (the ``k`` nearest
    of each word with a cosine of at least ``least``), each with its relative
    weight (1.0 each; a term the query already has is not added)."""
    names = {s.lower() for s in speakers}
    capital = {m.lower() for m in _CAPITALISED.findall(query)}
    words = query_terms(query)
    own = {_term(w) for w in words}
    table = neighbours()
    out: dict[str, float] = {}
    for word in words:
        if len(word) < 3 or not word.isalpha() or word in names or word in capital:
            continue
        for other, cos in table.of(word)[:k]:
            if cos < least:
                break
            term = _term(other)
            if term not in own:
                out[term] = 1.0
    return out


def weighted_top(
    bm25: Any,
    terms: list[str],
    extra: dict[str, float],
    weight: float,
    limit: int,
    k1: float,
    b: float,
) -> list[tuple[int, float]]:
    """``BM25._top`` with the ``extra`` terms counted ``weight`` × their
    relative weight (the query's own terms count 1)."""
    if not terms or not bm25._row_of or limit <= 0:  # noqa: SLF001 - bench only
        return []
    count = len(bm25._ids)  # noqa: SLF001
    average = max(bm25._total / bm25.live, 1.0)  # noqa: SLF001
    lengths = np.frombuffer(bm25._lengths, dtype=np.float32)  # noqa: SLF001
    scores = np.zeros(count, dtype=np.float32)
    touched = 0
    asked = [(t, 1.0) for t in terms] + [(t, weight * r) for t, r in extra.items()]
    for term, scale in asked:
        tid = bm25._vocab.get(term)  # noqa: SLF001
        if tid is None:
            continue
        rows = np.frombuffer(bm25._rows[tid], dtype=np.int32)  # noqa: SLF001
        freqs = np.frombuffer(bm25._freqs[tid], dtype=np.float32)  # noqa: SLF001
        norm = k1 * (1.0 - b + b * lengths[rows] / average)
        idf = bm25._idf(len(rows))  # noqa: SLF001
        scores[rows] += np.float32(scale * idf * (k1 + 1.0)) * freqs / (freqs + norm)
        touched += len(rows)
    if not touched:
        return []
    scores *= np.frombuffer(bm25._live, dtype=np.float32)  # noqa: SLF001
    return list(bm25._best(scores, min(limit, touched), sparse=touched * 2 < count))  # noqa: SLF001


def timing(questions: list[str], k: int, speakers: Iterable[str]) -> dict[str, float]:
    """Microseconds a question for ``expansion``: the first time each word is
    seen (its neighbours computed) and again (the cache's look-ups)."""
    names = list(speakers)
    table = neighbours()
    table.cache.clear()
    start = time.perf_counter()
    for q in questions:
        expansion(q, k, names)
    cold = (time.perf_counter() - start) / len(questions) * 1e6
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for q in questions:
            expansion(q, k, names)
        best = min(best, (time.perf_counter() - start) / len(questions) * 1e6)
    return {"cold_us": round(cold, 1), "warm_us": round(best, 1), "words_cached": len(table.cache)}


def _searches(memory: Any, questions: list[str]) -> dict[str, Any]:
    """``Memory.search`` (BM25 alone, floors off) p50 / mean in ms over the
    questions: without the shipped expansion, with it the first time each
    word is seen (its neighbours computed), then again three times each."""
    import statistics

    from memstrata.index import expand
    from memstrata.index.hybrid import Weights

    expand.warm()
    expand._nearest.cache_clear()  # noqa: SLF001 - bench only

    def run(weight: float) -> list[float]:
        weights = Weights(expand=weight, floor_lexical_alone=0.0)
        times = []
        for q in questions:
            start = time.perf_counter()
            memory.search(q, k=10, layers=("transcripts",), weights=weights)
            times.append((time.perf_counter() - start) * 1000)
        return [round(statistics.median(times), 3), round(sum(times) / len(times), 3)]

    out: dict[str, Any] = {"off": [run(0.0)], "on_first": run(0.35), "on_cached": []}
    for _ in range(3):
        out["off"].append(run(0.0))
        out["on_cached"].append(run(0.35))
    return out


def main() -> None:
    """The query-time cost: ``expansion`` per question (cold, then cached)
    and BM25's ranking with and without the added terms (best of 5 passes
    over every question of a conversation, BM25 alone, no embedder)."""
    import argparse
    import json
    import shutil
    import tempfile
    from pathlib import Path

    from memstrata.benchmarks import locomo
    from memstrata.benchmarks.retrievers import record_conversation
    from memstrata.index.hybrid import Weights
    from memstrata.index.lexical import stemmed
    from memstrata.memory import Memory

    parser = argparse.ArgumentParser(description=(main.__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--neighbours", type=int, default=5)
    parser.add_argument("--weight", type=float, default=0.2)
    args = parser.parse_args()
    conversation = locomo.load(args.data)[0]
    questions = [q.text for q in conversation.questions]
    report: dict[str, Any] = {
        "conversation": conversation.sample_id,
        "questions": len(questions),
        "neighbours": args.neighbours,
        "expansion": timing(questions, args.neighbours, conversation.speakers),
    }
    folder = Path(tempfile.mkdtemp(prefix="memstrata-qexp-"))
    try:
        with Memory.open(folder / "ws", embedder="none", session_max_turns=0) as memory:
            record_conversation(memory, conversation)
            memory.search("warm up", k=1)
            state = memory._search._searcher()  # noqa: SLF001 - bench only
            index, lexical = state.index, state.lexical
            w = Weights()
            asked = [
                (stemmed(query_terms(q)), expansion(q, args.neighbours, conversation.speakers))
                for q in questions
            ]
            added = sum(len(e) for _, e in asked) / len(asked)
            best = {k: float("inf") for k in ("shipped_us", "same_code_us", "expanded_us")}
            for _ in range(5):
                start = time.perf_counter()
                for terms, _extra in asked:
                    lexical.top(index, terms, 200, k1=w.k1, b=w.b)
                shipped = (time.perf_counter() - start) / len(asked) * 1e6
                start = time.perf_counter()
                for terms, _extra in asked:
                    weighted_top(lexical._bm25, terms, {}, args.weight, 200, w.k1, w.b)  # noqa: SLF001
                same = (time.perf_counter() - start) / len(asked) * 1e6
                start = time.perf_counter()
                for terms, extra in asked:
                    weighted_top(lexical._bm25, terms, extra, args.weight, 200, w.k1, w.b)  # noqa: SLF001
                expanded = (time.perf_counter() - start) / len(asked) * 1e6
                best["shipped_us"] = min(best["shipped_us"], shipped)
                best["same_code_us"] = min(best["same_code_us"], same)
                best["expanded_us"] = min(best["expanded_us"], expanded)
            report["bm25"] = {k: round(v, 1) for k, v in best.items()}
            report["terms_added_per_question"] = round(added, 2)
            report["search_ms"] = _searches(memory, questions)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
