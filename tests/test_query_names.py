"""The embedder reads a query without the transcripts' speaker names
(``text.without_names``; issue 16): every turn is embedded as "Speaker: text",
so the name in "What did Caroline paint?" pulled towards all of Caroline's
turns alike. BM25 and the speaker factor still read the name."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memstrata import Memory
from memstrata.embed import HashEmbedder
from memstrata.index.text import query_terms, without_names

AT = datetime(2023, 5, 8, 10, tzinfo=UTC)
NAMES = frozenset({"caroline", "melanie"})


def _without(query: str) -> str:
    return without_names(query, query_terms(query), NAMES)


def test_names_and_their_possessive_are_left_out() -> None:
    assert _without("What did Caroline's mom say?") == "What did mom say?"
    assert _without("When did melanie paint a sunset?") == "When did paint a sunset?"
    assert _without("What have Caroline and Melanie both painted?") == (
        "What have and both painted?"
    )


def test_other_words_and_names_stay() -> None:
    assert _without("Where is Carolina?") == "Where is Carolina?"  # another word
    assert _without("What did Tim paint?") == "What did Tim paint?"  # not a speaker
    assert _without("Caroline?") == "Caroline?"  # nothing but a name: as it is
    assert without_names("Caroline", ["caroline"], frozenset()) == "Caroline"


class Spy:
    """A bag-of-words embedder that notes what it was asked to embed."""

    name = "spy-hash"
    dim = 64

    def __init__(self) -> None:
        self.inner = HashEmbedder(self.dim)
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked += list(texts)
        return self.inner.embed(texts)


def _said(memory: Memory, session: str, speaker: str, *texts: str) -> None:
    memory.record_turns(
        [
            {
                "session": session,
                "user": text,
                "assistant": "",
                "meta": {"speakers": {"user": speaker}},
                "at": AT + timedelta(minutes=n),
            }
            for n, text in enumerate(texts)
        ]
    )


def test_the_query_is_embedded_without_the_speakers_names(tmp_path: Path) -> None:
    spy = Spy()
    with Memory.open(tmp_path / "ws", embedder=spy) as memory:
        _said(memory, "s1", "Caroline", "I painted a sunset by the lake")
        _said(memory, "s2", "Melanie", "We went camping with the kids")
        memory.reindex()  # the turns are embedded now, not at the first search
        spy.asked.clear()
        hits = memory.search("What did Caroline paint?", k=3, layers=["transcripts"])
        assert spy.asked == ["What did paint?"]
        assert hits[0].text == "I painted a sunset by the lake"
        spy.asked.clear()
        memory.search("What did Tim paint?", k=3, layers=["transcripts"])
        assert spy.asked == ["What did Tim paint?"]  # no turn is Tim's


def test_the_speaker_factor_still_reads_the_name(tmp_path: Path) -> None:
    """Two turns say the same; the one the question's speaker said ranks first."""
    spy = Spy()
    with Memory.open(tmp_path / "ws", embedder=spy) as memory:
        _said(memory, "s1", "Melanie", "I painted a sunset by the lake")
        _said(memory, "s2", "Caroline", "I painted a sunset by the lake")
        hits = memory.search("What did Caroline paint?", k=2, layers=["transcripts"])
        assert [hit.session for hit in hits] == ["s2", "s1"]
