"""The learned capture scorer (capture/scorer.py), its hook in scan, and its corpus."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memstrata.capture.scan as scan_module
from memstrata.capture import scorer
from memstrata.capture.scan import scan

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "capture"
LANGUAGES = ("en", "uz", "ru", "zh")
CATEGORIES = {"correction", "decision", "preference", "proper_noun", "remember", "specific_value"}


def bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cats(text: str, **kwargs: bool) -> set[str]:
    kwargs.setdefault("learned", True)
    return {entry.category for entry in scan(text, **kwargs)}  # type: ignore[arg-type]


def test_scan_is_the_rules_alone_unless_the_scorer_is_asked_for() -> None:
    assert scan("please use Kafka in the docs") == []
    assert [e.category for e in scan("please use Kafka in the docs", learned=True)] == [
        "preference"
    ]


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("note for later: call the bank", "remember"),
        ("hey, this is Priya from the billing team", "proper_noun"),
        ("please use Terraform in all examples", "preference"),
        ("we'll try Kafka first and see", "decision"),
        ("заметка на потом: оплатить счёт", "remember"),
        ("сначала попробуем Redis", "decision"),
        ("avval Django ni sinab ko'ramiz", "decision"),
        ("你好，我是数据组的王芳", "proper_noun"),
    ],
)
def test_the_scorer_finds_paraphrases_without_the_rules(text: str, category: str) -> None:
    # the rules now cover these forms too (issue 17); the scorer must find them alone
    assert category in {found for found, _ in scorer.additions(text, set())}
    assert category in cats(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm going home",
        "Do you prefer tabs or spaces?",
        "I remember when we had no CI at all, wild times",
        "I still remember my first job at a bank",
        "если бы мы выбрали Redis, что бы сломалось?",
        "如果我们用Kafka会怎么样",
    ],
)
def test_the_scorer_adds_nothing_to_hard_negatives(text: str) -> None:
    assert cats(text) == cats(text, learned=False) == set()


def test_a_vetoed_sentence_never_gets_a_learned_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    def everything(text: str, hits: object) -> list[tuple[str, tuple[int, int]]]:
        return [("remember", (0, len(text)))]

    monkeypatch.setattr(scan_module, "additions", everything)
    assert cats("do you remember the bank?") == set()  # a question: the pack's veto
    assert cats("what if we moved everything to Rust") == set()
    assert cats("the bank, tonight") == {"remember"}


def test_the_scorer_never_repeats_a_rule_category_and_keeps_the_rules() -> None:
    text = "Let's go with Postgres. note for later: call the bank"
    entries = scan(text, learned=True)
    assert [e.category for e in entries].count("decision") == 1
    rules = scan(text, learned=False)
    assert set(rules) <= set(entries)
    for entry in entries:
        assert text[entry.span[0] : entry.span[1]] == entry.text


def test_without_weights_the_rules_answer_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scorer, "load_model", lambda: None)
    assert scorer.additions("please use Kafka in the docs", set()) == []
    assert cats("please use Kafka in the docs") == set()


def test_a_corrupt_weights_file_disables_the_scorer(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def joinpath(self, *parts: str) -> Broken:
            return self

        def open(self, mode: str) -> object:
            raise OSError("gone")

    monkeypatch.setattr(scorer.resources, "files", lambda package: Broken())
    scorer.load_model.cache_clear()
    try:
        assert scorer.load_model() is None
    finally:
        monkeypatch.undo()
        scorer.load_model.cache_clear()
    assert scorer.load_model() is not None


def test_the_shipped_weights_are_small_and_match_the_features() -> None:
    path = ROOT / "src" / "memstrata" / "capture" / "data" / "scorer.npz"
    assert path.stat().st_size < 500_000
    model = scorer.load_model()
    assert model is not None
    rows = {**model.index, **{f"{a} {b}": row for (a, b), row in model.pairs.items()}}
    for text in ("hey, this is Priya from the billing team", "记一下：备份电脑", "не забудь"):
        expected = model.bias + sum(
            (model.weights[rows[name]] for name in scorer.features(text) if name in rows),
            np.zeros(len(scorer.DURABLE), dtype=np.float32),
        )
        assert np.allclose(model.logits(text, ()), expected, atol=1e-3)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.text(max_size=300), st.sets(st.sampled_from(sorted(scorer.DURABLE))))
def test_additions_never_raise_nor_repeat_the_rules(text: str, hits: set[str]) -> None:
    for category, (start, end) in scorer.additions(text, hits):
        assert category in scorer.DURABLE and category not in hits
        assert 0 <= start < end <= len(text) and text[start:end].strip()
    entries = scan(text, learned=True)
    assert len({e.category for e in entries}) == len(entries)


def test_the_generated_corpus_is_reproducible() -> None:
    generator = bench("gen_capture_corpus")
    for lang in LANGUAGES:
        assert generator.render(lang) == (CORPUS / "generated" / f"{lang}.jsonl").read_text(
            encoding="utf-8"
        )


@pytest.mark.parametrize(
    ("folder", "author"),
    [("generated", "template"), ("negatives", "hand"), ("probe", "probe"), ("fresh", "fresh")],
)
def test_the_grown_corpus_is_well_formed(folder: str, author: str) -> None:
    texts = set()
    for folder_name in ("", "blind", "generated", "negatives", "probe", "fresh"):
        for lang in LANGUAGES:
            path = CORPUS / folder_name / f"{lang}.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines():
                texts.add(json.loads(line)["text"]) if folder_name != folder else None
    for lang in LANGUAGES:
        lines = (CORPUS / folder / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
        messages = [json.loads(line) for line in lines]
        assert len(messages) >= 10
        assert len({m["id"] for m in messages}) == len({m["text"] for m in messages}) == len(lines)
        for message in messages:
            assert message["lang"] == lang and message["author"] == author
            assert set(message["labels"]) <= CATEGORIES
            assert message["labels"] == sorted(set(message["labels"]))
            assert message["why"] and message["text"] not in texts, message
            if folder == "negatives":
                assert message["labels"] == []


def test_training_is_deterministic() -> None:
    trainer = bench("train_capture")
    messages = [m for m in trainer.load_corpus() if m["lang"] == "en"][:120]
    first, second = trainer.train(messages, steps=30), trainer.train(messages, steps=30)
    assert first.names == second.names
    assert np.array_equal(first.weights, second.weights)
    assert np.array_equal(first.bias, second.bias)
