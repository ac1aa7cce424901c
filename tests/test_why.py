"""The explain output of hybrid search (``index.why``): the same ranking with
or without it, and parts that add up to each hit's score (issue 20's "why" panel)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.index.hybrid import Weights
from memstrata.index.why import Why


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    memory = Memory.open(tmp_path / "ws", embedder="hash")
    memory.remember("The staging database listens on port 5433", category="fact")
    memory.remember("I prefer dark mode in every editor", category="preference")
    memory.remember("The production database is in Frankfurt", category="fact")
    at = datetime(2024, 5, 7, 12, tzinfo=UTC)
    memory.record_turn("s1", user="Caroline: where is the database hosted?", assistant="Frankfurt")
    memory.record_turn("s1", user="We moved the database to Go", assistant="Noted.", at=at)
    memory.record_turn("s1", user="How many replicas does the database have?", assistant="3")
    memory.flush()
    return memory


QUERIES = [
    "database",
    "where is the database",
    "how many database replicas",
    "what did we do with the database on May 7, 2024",
    "dark mode",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_ranking_is_the_same_with_a_why(memory: Memory, query: str) -> None:
    plain = memory.search(query, k=10, include_superseded=True)
    why = Why()
    explained = memory.search(query, k=10, include_superseded=True, why=why)
    assert [(h.citation, h.score) for h in explained] == [(h.citation, h.score) for h in plain]
    assert len(why.hits) == len(explained)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("fusion", ["minmax", "rrf"])
def test_the_parts_add_up_to_each_score(memory: Memory, query: str, fusion: str) -> None:
    why = Why()
    hits = memory.search(query, k=10, weights=Weights(fusion=fusion), why=why)
    assert hits
    for hit, explained in zip(hits, why.hits, strict=True):
        fused = explained.bm25 + explained.vector + explained.context
        product = math.prod(times for _, times in explained.factors)
        assert math.isclose(fused * product, hit.score, rel_tol=1e-9)
        assert explained.score == hit.score
        # only transcript turns gain from their context: elsewhere the two lists are the score
        if hit.layer != "transcripts":
            assert math.isclose(explained.context, 0.0, abs_tol=1e-12)
        assert not any(name.startswith("other") for name, _ in explained.factors)
        # found by a list, or (a transcript turn) only by the turns around it
        listed = explained.bm25_rank is not None or explained.vector_rank is not None
        assert listed or explained.context > 0


def test_named_factors_show(memory: Memory) -> None:
    why = Why()
    hits = memory.search("what did we do with the database on May 7, 2024", k=10, why=why)
    factors = {name for explained in why.hits for name, _ in explained.factors}
    assert any("day the query names" in name for name in factors), factors
    assert any(name.startswith("source user × layer transcripts") for name in factors)
    assert hits[0].layer == "transcripts"
    data = why.hits[0].to_dict()
    assert set(data) == {"score", "bm25", "vector", "context", "factors"}
