"""The scanner's fast path finds exactly what the plain reference finds.

The reference is ``load_rules(use_triggers=False)``: every category's pattern
searched over the whole text. The fast path (heads, triggers, the sentence and
quote regexes written to start with one character class) must give the same
entries on every message of the corpus, alone and joined into the 200-character
messages the speed bar is measured on.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture_corpus import open_texts
from memstrata.capture import heads, scorer
from memstrata.capture import scan as scan_module
from memstrata.capture.scan import load_rules, scan

# The patterns as first written (one alternation each): the reference.
SENTENCE_END = re.compile(r"[.!?…]+(?=\s)|[。！？；\n]+|[.!?…]+$")
QUOTED = re.compile(r"(?<!\w)'[^'\n]+'(?!\w)|\"[^\"\n]+\"|“[^”\n]+”|«[^»\n]+»|「[^」\n]+」")
ALPHABET = "ab Я好.!?…。！？；\n'\"“”«»「」_1 "


def texts() -> list[str]:
    return open_texts()


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [match.span() for match in pattern.finditer(text)]


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_the_sentence_and_quote_regexes_match_as_the_reference(text: str) -> None:
    assert spans(scan_module._SENTENCE_END, text) == spans(SENTENCE_END, text)
    assert spans(scorer._SENTENCE_END, text) == spans(SENTENCE_END, text)
    assert spans(scan_module._QUOTED, text) == spans(QUOTED, text)


@pytest.mark.parametrize("after", [None, 1, 10**9])
def test_the_fast_path_matches_the_reference_on_joined_messages(
    after: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus and messages joined from it, as the reference finds them;
    with ``HeadSearch.narrow`` as shipped (None), narrowing at once (1) or
    never (the whole pattern at every head, the whole ``rest`` for the next
    rest start)."""
    if after is not None:
        monkeypatch.setattr(heads, "NARROW_AFTER", after)
    fast, reference = load_rules(), load_rules(use_triggers=False)
    corpus = texts()
    joined = [" ".join(corpus[start : start + 6])[:200] for start in range(0, len(corpus), 2)]
    for text in corpus + joined:
        assert scan(text, rules=fast, learned=False) == scan(
            text, rules=reference, learned=False
        ), text
    narrowed = [
        search
        for pack in fast.packs.values()
        for category in pack.categories.values()
        for search in (category.search, category.search.spaced)
        if search is not None and search.subsets
    ]
    if after is not None:
        assert bool(narrowed) == (after == 1)


def reference_sentences(text: str) -> list[tuple[int, int]]:
    """``scorer.sentences`` as first written: the spans between the plain
    pattern's matches, each with its leading white space skipped."""
    found, start = [], 0
    for mark in SENTENCE_END.finditer(text):
        found.append((start, mark.end()))
        start = mark.end()
    found.append((start, len(text)))
    out = []
    for begin, end in found:
        while begin < end and text[begin].isspace():
            begin += 1
        if begin < end:
            out.append((begin, end))
    return out


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=ALPHABET + "\t\x1c\x85\xa0\u2028\u3000x", max_size=40))
def test_the_scorer_sentences_are_the_reference_ones(text: str) -> None:
    assert scorer.sentences(text) == reference_sentences(text)


def test_the_scorer_sentences_are_the_reference_ones_on_the_corpus() -> None:
    corpus = texts()
    joined = [" ".join(corpus[start : start + 6])[:200] for start in range(0, len(corpus), 2)]
    for text in corpus + joined:
        assert scorer.sentences(text) == reference_sentences(text), text


VETO_WORDS = [
    *re.findall(r"\S+", "I prefer tea ? if we decided said `x` Я думаю 好 吗 。 İ ſ Maybe"),
    *re.findall(r"\S+", "suppose my name"),
    ". ",
    "! ",
    "\n",
    "  ",
]


def _veto_checks(text: str) -> list[tuple[bool, bool]]:
    """Per scorer sentence and pack: (the heads' veto answer as ``_learned``
    asks it, the veto pattern searched over the sentence as it used to)."""
    from memstrata.capture.headfind import is_spaced
    from memstrata.capture.scorer import sentences

    rules = scan_module.default_rules()
    codes = scan_module._detect(text)
    spaced = is_spaced(text)
    seeker = scan_module._finder(rules, codes, spaced)
    message = scan_module._Message(text, text.lower(), spaced, seeker)
    out = []
    for start, end in sentences(text):
        for index, code in enumerate(codes):
            pack = rules.packs[code]
            slot = index * scan_module._SLOTS + scan_module._VETO
            fast = scan_module._vetoed(pack, message, (start, end), slot)
            plain = pack.veto is not None and pack.veto.pattern.search(text[start:end]) is not None
            out.append((fast, plain))
    return out


def test_the_learned_sentences_are_vetoed_as_by_the_plain_veto_search() -> None:
    """``_learned`` asks ``_vetoed`` (heads) about the scorer's sentences: the
    same answer as each pack's veto pattern searched over the sentence."""
    corpus = texts()
    joined = [" ".join(corpus[start : start + 6])[:200] for start in range(0, len(corpus), 2)]
    vetoed = 0
    for text in corpus + joined:
        for fast, plain in _veto_checks(text):
            assert fast == plain, text
            vetoed += plain
    assert vetoed > 100  # the vetoes were put to the test


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.sampled_from(VETO_WORDS), max_size=30).map(" ".join))
def test_vetoes_by_heads_match_the_plain_search_on_any_sentence(text: str) -> None:
    for fast, plain in _veto_checks(text):
        assert fast == plain
