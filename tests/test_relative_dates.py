"""Relative time words resolved against the day a turn was said, indexed
beside it (index.relative_dates, Chunk.body; issue 16)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.index.chunks import Chunk
from memstrata.index.hybrid import Weights
from memstrata.index.relative_dates import resolved_dates

MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday", ["7 May 2023", "May 2023"]),
        ("Going camping tomorrow!", ["9 May 2023", "May 2023"]),
        ("We moved last week", ["May 2023"]),
        ("Last weekend we hiked", ["May 2023"]),
        ("I start next month", ["June 2023"]),
        ("Last year I painted a sunrise", ["2022"]),
        ("I ran a race last Sunday", ["7 May 2023", "May 2023"]),
        ("See you next Monday", ["15 May 2023", "May 2023"]),
        ("It was 2 weeks ago", ["April 2023"]),
        ("a few days ago", ["5 May 2023", "May 2023"]),
        ("Three months ago I adopted a dog", ["February 2023"]),
        ("I moved from Sweden 4 years ago", ["2019"]),
        ("January in December is cold", []),  # no relative words
        ("I love the sunset", []),
    ],
)
def test_resolves_relative_time_words(text: str, expected: list[str]) -> None:
    assert resolved_dates(text, MONDAY) == expected


def test_the_words_of_a_turn_hold_its_dates_and_its_text_and_body_do_not() -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turn = Chunk("sessions/s.jsonl", "transcripts", 1, 1, "I went yesterday", "Ann", "s", said)
    assert turn.words == "Ann: I went yesterday (7 May 2023 May 2023 May 2023)"
    assert turn.text == "I went yesterday"
    assert turn.body == "Ann: I went yesterday"  # what the embedder reads
    fact = Chunk("MEMORY.md", "long_term", 1, 1, "I went yesterday", "", created_at=said)
    assert fact.words == "I went yesterday"  # only what was said in a conversation
    undated = Chunk("sessions/s.jsonl", "transcripts", 1, 1, "I went yesterday", "Ann", "s")
    assert undated.words == "Ann: I went yesterday"


def test_every_dated_turn_holds_its_month() -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turn = Chunk("sessions/s.jsonl", "transcripts", 1, 1, "We adopted a puppy", "Ann", "s", said)
    assert turn.words == "Ann: We adopted a puppy (May 2023)"
    assert turn.body == "Ann: We adopted a puppy"


def test_a_question_naming_the_month_finds_what_was_said_then(tmp_path: Path) -> None:
    """Two turns say the same words; BM25 ranks the one said in the month the
    question names first even with the date factor off."""
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        for day, session in (
            (datetime(2023, 5, 8, 10, tzinfo=UTC), "s1"),
            (datetime(2023, 8, 8, 10, tzinfo=UTC), "s2"),
        ):
            memory.record_turn(session, user="We adopted a puppy", assistant="", at=day)
        hits = memory.search(
            "puppy adopted August 2023", k=2, layers=["transcripts"], weights=Weights(date=0.0)
        )
        assert [hit.session for hit in hits] == ["s2", "s1"]


def test_a_question_naming_the_day_finds_the_turn_that_said_yesterday(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.record_turn(
            "s2",
            user="The support group met",
            assistant="",
            at=datetime(2023, 5, 20, 10, tzinfo=UTC),
        )
        memory.record_turn(
            "s1",
            user="I went to the support group yesterday and it was powerful",
            assistant="",
            at=datetime(2023, 5, 8, 10, tzinfo=UTC),
        )
        hits = memory.search("support group 7 May", k=2, layers=["transcripts"])
        assert "yesterday" in hits[0].text
