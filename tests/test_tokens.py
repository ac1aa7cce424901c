"""Token counters: the seeds' estimate, the offline exact counter, picking by name."""

from __future__ import annotations

import math
import socket
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.context import tokens
from memstrata.context.tokens import (
    ENCODINGS,
    ESTIMATE,
    EstimateCounter,
    TokenCounter,
    counter,
    exact_counter,
)
from memstrata.errors import BackendUnavailable, InvalidInput


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("Привет", 2)],
)
def test_the_estimate_is_a_quarter_of_the_characters_rounded_up(text: str, expected: int) -> None:
    assert EstimateCounter().count(text) == expected


@given(st.text(max_size=500))
def test_the_estimate_is_ceil_of_len_over_four(text: str) -> None:
    assert ESTIMATE.count(text) == math.ceil(len(text) / 4)


@pytest.mark.parametrize("spec", [None, "", "estimate", " Estimate "])
def test_counter_defaults_to_the_estimate(spec: str | None) -> None:
    picked: TokenCounter = counter(spec)
    assert picked.name == "estimate"
    assert picked.count("abcdefgh") == 2


@pytest.mark.parametrize("spec", ["gpt2", "r50k_base", "tiktoken", "nonsense"])
def test_unknown_counters_are_refused_without_loading_anything(spec: str) -> None:
    with pytest.raises(InvalidInput, match="estimate"):
        counter(spec)
    with pytest.raises(InvalidInput, match="o200k_base"):
        exact_counter(spec)


def test_a_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)
    monkeypatch.setitem(sys.modules, "bpe_openai._bindings", None)
    tokens._load_tokenizer.cache_clear()
    try:
        with pytest.raises(BackendUnavailable, match=r"memstrata\[tokens\]"):
            exact_counter("o200k_base")
        with pytest.raises(BackendUnavailable):
            counter("cl100k_base")
    finally:
        tokens._load_tokenizer.cache_clear()


# -- the exact counter (needs the optional extra "tokens"; skipped without it) --


def _exact(encoding: str) -> TokenCounter:
    try:
        return exact_counter(encoding)
    except BackendUnavailable:
        pytest.skip("bpe-openai is not installed (extra: memstrata[tokens])")


@pytest.mark.parametrize(
    ("encoding", "text", "expected"),
    [
        ("cl100k_base", "hello world", 2),
        ("cl100k_base", "The quick brown fox jumps over the lazy dog.", 10),
        ("o200k_base", "hello world", 2),
        ("o200k_base", "The quick brown fox jumps over the lazy dog.", 10),
        ("o200k_base", "", 0),
    ],
)
def test_exact_counts_match_the_reference_tokenizers(
    encoding: str, text: str, expected: int
) -> None:
    assert _exact(encoding).count(text) == expected


def test_exact_counters_are_picked_by_encoding_name() -> None:
    _exact("o200k_base")
    for name in ENCODINGS:
        picked = counter(name.upper())
        assert picked.name == name
        assert picked.count("Salom, dunyo! Привет, мир!") > 0
    assert exact_counter().name == "o200k_base"


def test_special_token_text_is_counted_as_plain_text() -> None:
    assert _exact("o200k_base").count("<|endoftext|>") > 1


def test_the_exact_counter_loads_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    _exact("o200k_base")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the exact counter tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    tokens._load_tokenizer.cache_clear()
    assert exact_counter("cl100k_base").count("hello world") == 2
