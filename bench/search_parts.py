"""Where a LoCoMo search spends its time: the whole ``Memory.search`` and each
part of ``index.hybrid`` (the query's embedding, BM25, the vector list, the
relevance floor, the conversation context, the factors), p50 in
milliseconds over one conversation's questions, after a warm-up pass.

The parts are timed by wrapping the module functions for the run (nothing in
``src`` changes); the wrappers cost a little, so the parts compare with each
other and with another tree's (``PYTHONPATH=OTHER/src``, runs alternated),
not with ``memstrata bench locomo``'s p50.

Run::

    .venv/bin/python bench/search_parts.py --data ../shared/data/locomo/locomo_dev.json \\
        --conversation 0 --rounds 2 --json /tmp/parts.json
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchutil import emit, machine
from memstrata.benchmarks.locomo import load
from memstrata.benchmarks.retrievers import memstrata_retriever
from memstrata.embed import onnx
from memstrata.index import hybrid, lexical

TIMES: dict[str, list[float]] = {}


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES.setdefault(name, []).append((time.perf_counter() - began) * 1000)

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    for name in ("_nearest", "_in_context", "_factored", "relevance"):
        setattr(hybrid, name, _timed(name, getattr(hybrid, name)))
    lexical.Lexical.top = _timed("bm25", lexical.Lexical.top)  # type: ignore[method-assign]
    onnx.MiniLMEmbedder.embed = _timed("embed", onnx.MiniLMEmbedder.embed)  # type: ignore[method-assign]
    conversation = load(args.data)[args.conversation]
    search = memstrata_retriever(conversation)
    questions = [question.text for question in conversation.questions]
    for question in questions:  # warm: the postings, the matrix, the model
        search(question, 10)
    rounds = []
    for _ in range(args.rounds):
        TIMES.clear()
        whole = []
        for question in questions:
            began = time.perf_counter()
            search(question, 10)
            whole.append((time.perf_counter() - began) * 1000)
        parts = {name: round(statistics.median(times), 3) for name, times in TIMES.items()}
        rounds.append({"search_p50_ms": round(statistics.median(whole), 3), "parts_p50_ms": parts})
    emit(
        {
            "machine": machine(),
            "conversation": conversation.sample_id,
            "questions": len(questions),
            "rounds": rounds,
        },
        args.json,
    )


if __name__ == "__main__":
    main()
