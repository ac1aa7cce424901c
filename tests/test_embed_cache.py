"""The content-hash vector cache (embed.cache) and the index sync that uses it:
a text embedded once is not sent to the model again (issue 16, ingest speed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory
from memstrata.embed import HashEmbedder
from memstrata.embed.cache import VectorCache
from memstrata.errors import InvalidInput


class Counting:
    """A HashEmbedder that remembers every text it was asked to embed."""

    def __init__(self, name: str = "counting-hash") -> None:
        self._inner = HashEmbedder(64)
        self.name = name
        self.dim = self._inner.dim
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.seen += list(texts)
        return self._inner.embed(texts)


def test_a_cached_text_is_not_embedded_again() -> None:
    model, cache = Counting(), VectorCache()
    first = cache.embed(model, ["I see.", "Lisbon in May", "I see."])
    assert model.seen == ["I see.", "Lisbon in May"]  # a repeat within a call: once
    again = cache.embed(model, ["Lisbon in May", "new text", "I see."])
    assert model.seen == ["I see.", "Lisbon in May", "new text"]
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    asked = ["Lisbon in May", "new text", "I see."]
    np.testing.assert_array_equal(again, model._inner.embed(asked))
    assert (cache.hits, cache.misses) == (2, 3)  # rows answered, texts sent to the model


def test_bounded_least_recently_used_first() -> None:
    model, cache = Counting(), VectorCache(size=2)
    cache.embed(model, ["a", "b"])
    cache.embed(model, ["a"])  # a is now the most recent
    cache.embed(model, ["c"])  # b goes
    assert len(cache) == 2
    model.seen.clear()
    cache.embed(model, ["a", "b", "c"])
    assert model.seen == ["b"]


def test_size_zero_caches_nothing_and_bad_sizes_are_refused() -> None:
    model, cache = Counting(), VectorCache(size=0)
    cache.embed(model, ["x"])
    cache.embed(model, ["x"])
    assert model.seen == ["x", "x"] and len(cache) == 0
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(InvalidInput):
            VectorCache(size=bad)  # type: ignore[arg-type]


def test_rows_a_caller_changes_do_not_change_the_cache() -> None:
    model, cache = Counting(), VectorCache()
    rows = cache.embed(model, ["kept"])
    rows[0] = 0.0
    np.testing.assert_array_equal(cache.embed(model, ["kept"]), model._inner.embed(["kept"]))


def test_embedders_of_another_name_do_not_share_vectors() -> None:
    one, other, cache = Counting("one"), Counting("other"), VectorCache()
    cache.embed(one, ["same words"])
    cache.embed(other, ["same words"])
    assert other.seen == ["same words"]


def test_a_lone_surrogate_is_a_text_like_any_other() -> None:
    model, cache = Counting(), VectorCache()
    cache.embed(model, ["bad \ud800 text"])
    cache.embed(model, ["bad \ud800 text"])
    assert model.seen == ["bad \ud800 text"]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "ok", ""]), max_size=6)))
def test_always_the_models_vectors_in_input_order(calls: list[list[str]]) -> None:
    model, cache = Counting(), VectorCache(size=3)
    for texts in calls:
        np.testing.assert_array_equal(cache.embed(model, texts), model._inner.embed(texts))


def test_a_repeated_reply_is_embedded_once_across_syncs(tmp_path: Path) -> None:
    """An agent's turn after turn, each searched for at once (a sync per turn):
    its stock reply reaches the model once, not once per turn."""
    model = Counting()
    with Memory.open(tmp_path / "ws", embedder=model, session_max_turns=0) as memory:
        for text in ("my dog Rex needs his shots", "the train to Riga leaves at nine"):
            memory.record_turn("s", user=text, assistant="I see.")
            assert memory.search(text, k=1)
    assert model.seen.count("I see.") == 1
    assert sum("Riga" in text for text in model.seen) >= 1  # the new turn was embedded
