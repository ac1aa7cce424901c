"""Contextual vectors on every backend (``index.windows``): a transcript
turn's vector score is ``0.4 cos(query, turn) + 0.6 cos(query, window)`` once
it has a next message (until then its own cosine), and the turn before a new
one is embedded again, read through ``search(why=...)``."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import RecordingEmbedder
from memstrata.index.hybrid import Weights
from memstrata.index.why import Why
from places import Place

DIM = 384  # PostgreSQL's vector column
OPEN = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0)
SAID = ["We moved the launch", "To when?", "To the 14th of March", "Noted."]


def _model() -> RecordingEmbedder:
    # every cosine positive: each turn is in the vector list
    return RecordingEmbedder(dim=DIM, shift=1.0, name="recording-384")


def _scores(memory, model: RecordingEmbedder, query: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    why = Why()
    hits = memory.search(query, k=10, layers=["transcripts"], weights=OPEN, why=why)
    return {
        hit.text: explained.vector_score
        for hit, explained in zip(hits, why.hits, strict=True)
        if explained.vector_score is not None
    }


def _expected(model: RecordingEmbedder, query: np.ndarray, own: str, window: str) -> float:
    return float(0.4 * model.vector(own) @ query + 0.6 * model.vector(window) @ query)


def test_a_turn_scores_with_its_window_and_is_embedded_again(place: Place) -> None:
    model = _model()
    memory = place.open(embedder=model, context_vectors=0.6)
    memory.record_turn("s1", user=SAID[0], assistant=SAID[1])
    first = _scores(memory, model, "launch plans")
    query = model.vector(model.seen[-1])  # the query, as the embedder read it
    # the newest message waits for its next one: its own vector alone
    assert abs(first[SAID[1]] - float(model.vector(SAID[1]) @ query)) < 1e-5
    memory.record_turn("s1", user=SAID[2], assistant=SAID[3])
    scores = _scores(memory, model, "launch plans")
    windows = ["\n".join(SAID[max(0, n - 1) : n + 2]) for n in range(len(SAID))]
    assert windows[1] == "We moved the launch\nTo when?\nTo the 14th of March"
    for n, text in enumerate(SAID[:-1]):
        assert abs(scores[text] - _expected(model, query, text, windows[n])) < 1e-5, text
    assert abs(scores[SAID[-1]] - float(model.vector(SAID[-1]) @ query)) < 1e-5
    # another Memory on the same workspace reads the same vectors
    again = _scores(place.open(embedder=_model(), context_vectors=0.6), model, "launch plans")
    assert again == pytest.approx(scores, abs=1e-6)
