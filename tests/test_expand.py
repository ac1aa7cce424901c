"""A question's words also ask BM25 for their nearest words by the static
table (index.expand; issue 16, seventh session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.index.expand import expansion, weight_for
from memstrata.index.hybrid import Weights
from memstrata.index.lexical import BM25, document_terms, stemmed

# Floors off: a match found only through a neighbour holds none of the
# question's own words, so without vectors the keyword floor would refuse it;
# and MiniLM's weight given (BM25 alone has none by default).
OPEN = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0, expand=0.35)


def test_a_word_brings_its_nearest_words_not_its_own_stem() -> None:
    added = expansion("Who likes painting?", frozenset())
    assert {"painter", "artist", "art"} <= set(added)
    assert "paint" not in added  # "painting" is indexed as "paint": already asked


def test_names_and_capitalised_words_are_not_expanded() -> None:
    assert expansion("What did Caroline say?", frozenset()) == expansion(
        "What did say?", frozenset()
    )
    assert expansion("what did caroline say", frozenset({"caroline"})) == expansion(
        "what did say", frozenset()
    )


def test_the_added_terms_count_their_weight() -> None:
    bm25 = BM25()
    bm25.add(1, document_terms("my brother an artist"))  # as long as the other
    bm25.add(2, document_terms("my sister likes painting"))
    asked = stemmed(["painting"])
    assert [key for key, _ in bm25.top(asked, 5, k1=0.9, b=0.4)] == [2]
    both = bm25.top(asked, 5, k1=0.9, b=0.4, extra=stemmed(["artist"]), weight=0.35)
    assert [key for key, _ in both] == [2, 1]
    assert both[1][1] == pytest.approx(0.35 * both[0][1], rel=1e-5)


def test_search_finds_a_turn_by_a_neighbour_of_the_questions_word(tmp_path: Path) -> None:
    """No word in common: BM25 finds the artist only through "painting"'s
    neighbours (and not at all with ``expand`` 0)."""
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.remember("My brother is an artist")
        memory.remember("My sister is a lawyer")
        found = [hit.text for hit in memory.search("Who likes painting?", k=2, weights=OPEN)]
        assert found == ["My brother is an artist"]
        off = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0, expand=0.0)
        assert memory.search("Who likes painting?", k=2, weights=off) == []


def test_a_when_question_is_not_expanded(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.remember("My brother is an artist")
        assert memory.search("When did he start painting?", k=2, weights=OPEN) == []


def test_the_weight_is_the_embedders() -> None:
    """Measured with MiniLM; the static table lost with it; BM25 alone unmeasured."""
    assert weight_for("minilm") == 0.35
    assert weight_for("static") == weight_for("none") == weight_for(object()) == 0.0


def test_search_without_weights_takes_the_embedders(tmp_path: Path) -> None:
    floors_off = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0)
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.remember("My brother is an artist")
        assert memory.search("Who likes painting?", k=2, weights=floors_off) == []
        assert memory._search._weights(None).expand == 0.0  # noqa: SLF001
    with Memory.open(tmp_path / "ws2", embedder="minilm") as memory:  # (nothing embedded)
        assert memory._search._weights(None).expand == 0.35  # noqa: SLF001
        assert memory._search._weights(Weights(expand=0.1)).expand == 0.1  # noqa: SLF001


def test_the_shipped_list_is_what_the_table_gives() -> None:
    """bench/build_neighbours.py wrote it from the table: a sample computed
    again agrees (a stemmer or table change needs a rebuild). Here it agrees
    word for word; another CPU's float sums may swap two near-tied
    neighbours, so a few words may differ, not more."""
    import random

    from memstrata.index import expand

    shipped = expand._neighbours()
    assert shipped is not None and len(shipped) > 20_000
    sample = random.Random(16).sample(sorted(shipped), 150) + ["painting", "kids", "dog"]
    computed = expand.compute(sample)
    differ = [word for word in sample if computed.get(word) != shipped[word]]
    assert len(differ) <= 3, differ
    assert all(computed[word] == shipped[word] for word in ("painting", "kids", "dog"))


def test_a_search_looks_words_up_without_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.index import expand

    def refused() -> None:
        raise AssertionError("the table was read at search time")

    monkeypatch.setattr(expand, "_Table", refused)
    assert {"painter", "artist"} <= set(expand.expansion("Who likes painting?", frozenset()))
