"""LoCoMo recall of hybrid search on PostgreSQL, by where the candidate lists
come from (``PostgresIndex(search=...)``): the RAM mirror (BM25 and the exact
vector matrix), SQL words (``ts_rank_cd`` over the ``tsv`` column) with SQL
vectors (HNSW), and HNSW vectors with the RAM BM25. Everything else -- the
fusion, context, factors, weights -- is the same code.

Each conversation is recorded in a workspace as ``memstrata bench locomo``
does (``benchmarks.retrievers``), indexed and embedded with the real model;
its index is then copied into a PostgreSQL tenant (an embedded server, or
``--backend URL``), and every question searched in every mode.

Run::

    .venv/bin/python bench/bench_postgres_locomo.py \\
        --data ../shared/data/locomo/locomo_dev.json --json bench/results/postgres_locomo.json
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchutil import emit, machine
from memstrata.benchmarks import locomo, pgserver, retrievers
from memstrata.index.hybrid import Filters, Vectors, hybrid
from memstrata.index.lexical import Lexical
from memstrata.index.protocol import FileState
from memstrata.memory import Memory
from memstrata.postgres.index import PostgresIndex

MODES = ("mirror", "sql", "hnsw")
TRANSCRIPTS = Filters(layers=frozenset({"transcripts"}))


def workspace(conversation: locomo.Conversation, folder: Path) -> tuple[Memory, dict[str, str]]:
    """The conversation recorded as ``benchmarks.retrievers`` records it."""
    memory = Memory.open(folder, embedder="minilm", session_max_turns=0)
    return memory, retrievers.record_conversation(memory, conversation)


def copied(memory: Memory, url: str) -> PostgresIndex:
    """The workspace's index, chunks and vectors, in a fresh tenant."""
    state = memory._search._searcher()  # noqa: SLF001
    source = state.index
    target = PostgresIndex(url, f"locomo-{uuid.uuid4().hex[:10]}")
    by_path: dict[str, list[int]] = {}
    for cid, chunk in source.chunks.items():
        by_path.setdefault(chunk.path, []).append(cid)
    vectors = {}
    for path, ids in by_path.items():
        new = target.replace(path, [source.chunks[cid] for cid in ids], FileState(0, 0, path))
        vectors.update({n: source.vectors[o] for o, n in zip(ids, new, strict=True)
                        if o in source.vectors})  # fmt: skip
    assert source.vector_model is not None
    target.set_vectors(source.vector_model, vectors)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    conversations = locomo.load(args.data)
    if args.limit_questions:
        conversations = locomo.limit_questions(conversations, args.limit_questions)
    server = pgserver.start(args.backend)
    folder = Path(tempfile.mkdtemp(prefix="memstrata-pg-locomo-"))
    built: dict[str, tuple[PostgresIndex, dict[str, str], Any]] = {}
    try:
        for conversation in conversations:
            memory, dia_of = workspace(conversation, folder / conversation.sample_id)
            embedder = memory._search._searcher().embedder  # noqa: SLF001
            built[conversation.sample_id] = (copied(memory, server.app), dia_of, embedder)
            memory.close()
        report: dict[str, Any] = {"machine": machine(), "server": server.settings}
        lists = {"vector_lists_from_sql": 0, "vector_lists_left_to_ram": 0}

        def counted(index: PostgresIndex) -> None:
            """Count where each search's vector list came from."""
            found = index.candidates

            def candidates(query: str, vector: Any, limit: int, filters: Filters) -> Any:
                words, near = found(query, vector, limit, filters)
                if vector is not None and index.search != "mirror":
                    key = (
                        "vector_lists_from_sql" if near is not None else "vector_lists_left_to_ram"
                    )
                    lists[key] += 1
                return words, near

            index.candidates = candidates  # type: ignore[method-assign]

        for index, _, _ in built.values():
            counted(index)
        for mode in MODES:

            def retriever(conversation: locomo.Conversation, mode: str = mode) -> locomo.Retriever:
                index, dia_of, embedder = built[conversation.sample_id]
                index.search, index.ann_above = mode, 0  # HNSW at this size too
                lexical, matrix = Lexical(), Vectors()

                def embed(text: str) -> Any:
                    return embedder.embed([text])[0]

                def search(question: str, k: int) -> list[str]:
                    hits = hybrid(index, question, k, TRANSCRIPTS, lexical=lexical,
                                  embed=embed, vectors=matrix)  # fmt: skip
                    ids = [dia_of.get((hit.ref or "").partition("#")[0]) for hit in hits]
                    return [found for found in ids if found]

                return search

            report[mode] = locomo.evaluate(conversations, retriever).as_json()
            report[mode].update(lists)
            lists.update(dict.fromkeys(lists, 0))
            print(mode, report[mode]["overall"], flush=True)
        emit(report, args.json)
    finally:
        for index, _, _ in built.values():
            index.close()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
