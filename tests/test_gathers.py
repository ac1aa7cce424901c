"""A question that gathers what was said at several times ("What books has
John read?") spreads its hits over sessions (``Weights.gather``,
``answers.gathers``; issue 16: on LoCoMo its evidence is in several sessions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput
from memstrata.index.answers import gathers
from memstrata.index.hybrid import Weights

AT = datetime(2023, 5, 8, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    "question",
    [
        "What books has John read?",
        "Which cities has John been to?",
        "What activities does Melanie partake in?",
        "Did Jon and Gina both participate in dance competitions?",
        "What do Jon and Gina have in common?",
        "How many times has John injured his ankle?",
    ],
)
def test_questions_that_gather(question: str) -> None:
    assert gathers(question)


@pytest.mark.parametrize(
    "question",
    [
        "When did Caroline go to the support group?",
        "What is Caroline's identity?",
        "How many cats does Carol have?",
        "What did Melanie paint recently?",
        "Where did Tim go last summer?",
    ],
)
def test_questions_that_do_not(question: str) -> None:
    assert not gathers(question)


def test_gather_is_checked() -> None:
    with pytest.raises(InvalidInput):
        Weights(gather=1.0)


def _said(memory: Memory, session: str, start: int, *texts: str) -> None:
    memory.record_turns(
        [
            {
                "session": session,
                "user": text,
                "assistant": "",
                "at": AT + timedelta(days=start, minutes=n),
            }
            for n, text in enumerate(texts)
        ]
    )


def test_a_gathering_question_spreads_over_sessions(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        _said(
            memory,
            "s1",
            0,
            "John read a fantasy book series, great books",
            "John read more books",
            "The weather was nice",
        )
        _said(memory, "s2", 7, "Lunch was fine", "John read Dune, good books", "We went for a walk")
        _said(memory, "s3", 14, "John went home")

        def sessions(question: str, weights: Weights) -> list[str | None]:
            hits = memory.search(question, k=2, layers=["transcripts"], weights=weights)
            return [hit.session for hit in hits]

        assert sessions("What books has John read?", Weights(gather=0.0)) == ["s1", "s1"]
        assert sessions("What books has John read?", Weights()) == ["s1", "s2"]
        # the same words, not a gathering question: no diversity
        assert sessions("John read books", Weights()) == ["s1", "s1"]
