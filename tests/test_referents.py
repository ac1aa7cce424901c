"""A transcript message that says "it", "that" or "there" is also found by
the content words of the message before it (index.referents; issue 16)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstrata import Memory
from memstrata.index.referents import refers, salient

AT = datetime(2023, 5, 8, 10, tzinfo=UTC)


def test_salient_words_are_content_words_longest_first() -> None:
    said = "Yeah, we went to the pottery workshop with the kids on Saturday"
    assert salient(said, 6) == ["workshop", "Saturday", "pottery", "went", "kids"]
    assert salient("oh wow that is so cool") == []
    assert len(salient("alpha bravo charlie delta echoes foxtrot golfing hotels", 6)) == 6


def test_three_words_by_default() -> None:
    """Three, chosen on LoCoMo by nested leave-one-out among 3 / 6 / 10 / all."""
    said = "Yeah, we went to the pottery workshop with the kids on Saturday"
    assert salient(said) == ["workshop", "Saturday", "pottery"]


def test_refers_to_what_was_said_before() -> None:
    assert refers("I loved it so much!")
    assert refers("There was a kiln")
    assert not refers("I loved the pottery workshop")
    assert not refers("Italy is lovely")  # a word, not "it"


def _turns(memory: Memory, session: str, *texts: str) -> None:
    memory.record_turns(
        [
            {"session": session, "user": text, "assistant": "", "at": AT + timedelta(minutes=n)}
            for n, text in enumerate(texts)
        ]
    )


def test_a_turn_that_says_it_ranks_with_the_turn_it_points_at(tmp_path: Path) -> None:
    """Both replies follow a turn about the workshop (the same context boost);
    only the one that says "it" is about it, and it ranks above the other."""
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        _turns(memory, "s1", "We went to the pottery workshop on Saturday", "I loved it so much")
        _turns(memory, "s2", "The pottery workshop was on Saturday", "The kids made bowls")
        scores = {
            hit.text: hit.score
            for hit in memory.search("pottery workshop", k=5, layers=["transcripts"])
        }
        assert scores["I loved it so much"] > scores["The kids made bowls"]


def test_only_the_message_before_in_the_same_session_counts(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        _turns(memory, "s1", "We went to the pottery workshop on Saturday")
        _turns(memory, "s2", "I loved it so much, the kids made bowls")
        found = [hit.text for hit in memory.search("pottery workshop", k=5, layers=["transcripts"])]
        assert found and not any("I loved it" in text for text in found)
