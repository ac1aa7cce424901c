"""The labelled capture corpus (tests/data/capture) is well formed and balanced.

The corpus was labelled before any capture rule existed (see its README);
these checks keep it honest as it grows. The scores of the rules on it are
measured by the capture issue's own tests.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "data" / "capture"
CATEGORIES = {"correction", "decision", "preference", "proper_noun", "remember", "specific_value"}
LANGUAGES = ("en", "uz", "ru", "zh")


def load(lang: str) -> list[dict[str, object]]:
    lines = (CORPUS / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_message_is_well_formed(lang: str) -> None:
    messages = load(lang)
    assert len(messages) >= 75
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))
    texts = [m["text"] for m in messages]
    assert len(texts) == len(set(texts)), "a message appears twice"
    for message in messages:
        assert message["lang"] == lang
        assert isinstance(message["text"], str) and message["text"].strip()
        labels = message["labels"]
        assert isinstance(labels, list)
        assert set(labels) <= CATEGORIES, message
        assert labels == sorted(set(labels)), message
        if not labels:
            assert message.get("why"), f"hard negative without a reason: {message['id']}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_category_and_hard_negatives_are_present(lang: str) -> None:
    messages = load(lang)
    counts = Counter(label for m in messages for label in m["labels"])  # type: ignore[attr-defined]
    assert all(counts[category] >= 8 for category in CATEGORIES), counts
    negatives = sum(1 for m in messages if not m["labels"])
    assert 0.35 <= negatives / len(messages) <= 0.65


def test_the_corpus_is_large_enough_and_holds_the_named_traps() -> None:
    assert sum(len(load(lang)) for lang in LANGUAGES) >= 300
    english = {m["text"]: m["labels"] for m in load("en")}
    assert english["I'm going home"] == []
    assert english["Do you prefer tabs or spaces?"] == []
    assert any(t.startswith("I remember when") and english[t] == [] for t in english)
    assert any("it's" in t.lower() and english[t] == [] for t in english)


DURABLE = ("correction", "decision", "preference", "proper_noun", "remember")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_paraphrase_set_is_balanced(lang: str) -> None:
    """``paraphrase/``: ≥ 40 messages a language, about half hard negatives, every durable form."""
    lines = (CORPUS / "paraphrase" / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
    messages = [json.loads(line) for line in lines if line.strip()]
    assert len(messages) >= 40
    assert all(m["author"] == "paraphrase" and m["lang"] == lang for m in messages)
    counts = Counter(label for m in messages for label in m["labels"])
    assert all(counts[category] >= 3 for category in DURABLE), counts
    negatives = sum(1 for m in messages if not m["labels"])
    assert 0.35 <= negatives / len(messages) <= 0.65
