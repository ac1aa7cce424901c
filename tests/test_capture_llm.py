"""The optional LLM extractor (capture/llm.py), driven by a scripted client: never a network."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memstrata.capture.llm import Fact, LLMExtractor, Proposal, nearest
from memstrata.capture.scan import scan
from memstrata.capture.scorer import DURABLE
from memstrata.errors import BackendUnavailable, InvalidInput

CORPUS = Path(__file__).resolve().parent / "data" / "capture"


class Scripted:
    """An OpenAI-shaped client answering from a function of the prompt; it records calls."""

    def __init__(self, answer: Any) -> None:
        self.answer, self.calls = answer, []  # type: list[dict[str, Any]]
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        content = self.answer(kwargs["messages"][-1]["content"])
        if isinstance(content, Exception):
            raise content
        message = SimpleNamespace(content=content)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def reply(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


FACTS = [
    Fact("m1", "The staging database is pg-staging-2"),
    Fact("m2", "I prefer dark mode"),
    Fact("m3", "My dog is called Rex"),
]


def test_an_update_supersedes_one_of_the_facts_sent() -> None:
    client = Scripted(
        lambda prompt: reply(
            {
                "op": "UPDATE",
                "category": "correction",
                "text": "staging uses pg-staging-3",
                "target": "m1",
            }
        )
    )
    extractor = LLMExtractor(client, model="local", k=2)
    got = extractor.propose("Actually the staging database is pg-staging-3", FACTS)
    assert got == [Proposal("UPDATE", "correction", "staging uses pg-staging-3", "m1")]
    call = client.calls[0]
    assert call["model"] == "local" and call["temperature"] == 0
    prompt = call["messages"][-1]["content"]
    assert "m1: The staging database is pg-staging-2" in prompt and "m2" not in prompt


def test_the_reply_is_validated() -> None:
    client = Scripted(
        lambda prompt: reply(
            {"op": "UPDATE", "category": "preference", "text": "light mode", "target": "m9"},
            {"op": "DELETE", "category": "preference", "text": "x"},
            {"op": "ADD", "category": "weather", "text": "sunny"},
            {"op": "ADD", "category": "remember", "text": "  "},
            {"op": "NOOP", "category": "preference", "text": "dark mode", "target": "m2"},
            "not an object",
        )
    )
    got = LLMExtractor(client).propose("I prefer dark mode, and light mode for slides", FACTS)
    assert got == [
        Proposal("ADD", "preference", "light mode"),  # m9 was never sent: not an update
        Proposal("NOOP", "preference", "dark mode", "m2"),
    ]


@pytest.mark.parametrize("content", ["not json", "[]", '{"facts": 3}', None, '{"other": []}'])
def test_a_malformed_reply_proposes_nothing(content: Any) -> None:
    assert LLMExtractor(Scripted(lambda prompt: content)).propose("I'm Ann") == []


def test_a_client_error_is_one_error_of_ours() -> None:
    client = Scripted(lambda prompt: ConnectionError("refused"))
    with pytest.raises(BackendUnavailable, match="ConnectionError"):
        LLMExtractor(client).propose("I'm Ann")
    with pytest.raises(InvalidInput):
        LLMExtractor(client).propose("   ")


def test_without_openai_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(BackendUnavailable, match=r"memstrata\[llm\]"):
        LLMExtractor()


def test_nearest_ranks_by_shared_words() -> None:
    assert nearest("what is my dog called", FACTS, 1) == [FACTS[2]]
    assert nearest("nothing in common", FACTS, 3) == []


def test_against_the_rules_on_the_same_corpus() -> None:
    """With a scripted client answering the corpus labels, every label reaches
    the proposals intact (the plumbing loses nothing); the rules, on the same
    held-out messages, miss some. A real model's figures need a real endpoint."""
    messages = [
        json.loads(line)
        for folder in ("blind", "generated", "negatives")
        for lang in ("en", "uz", "ru", "zh")
        for line in (CORPUS / folder / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    gold = {m["text"]: [c for c in m["labels"] if c in DURABLE] for m in messages}

    def answer(prompt: str) -> str:
        text = prompt.rsplit("User message:\n", 1)[1]
        return reply(*({"op": "ADD", "category": c, "text": text} for c in gold[text]))

    extractor = LLMExtractor(Scripted(answer))
    missed_by_llm = missed_by_rules = 0
    for text, labels in gold.items():
        proposed = {p.category for p in extractor.propose(text)}
        found = {e.category for e in scan(text, learned=False)} & set(DURABLE)
        missed_by_llm += len(set(labels) ^ proposed)
        missed_by_rules += len(set(labels) ^ found)
    assert missed_by_llm == 0
    assert missed_by_rules > 0
