"""The namespace files of the LangGraph store (integrations.kv_files): what is
rendered parses back the same, whatever the keys and values hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import InvalidInput
from memstrata.integrations import kv_files as files
from memstrata.storage.access import allowed

labels = st.text(min_size=1, max_size=12).filter(lambda s: "." not in s)
namespaces = st.lists(labels, min_size=1, max_size=4).map(tuple)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
values = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
START = datetime(2026, 1, 1, tzinfo=UTC)


@given(namespaces, st.dictionaries(st.text(max_size=20), values, max_size=5), st.booleans())
def test_render_then_parse_gives_back_every_entry(
    namespace: tuple[str, ...], items: dict[str, dict[str, object]], indexed: bool
) -> None:
    entries = [
        files.Entry(key, value, START, START + timedelta(seconds=n), indexed)
        for n, (key, value) in enumerate(items.items())
    ]
    text = files.render(namespace, entries)
    parsed = files.parse(text)
    assert parsed is not None and parsed.namespace == namespace
    assert list(parsed.entries.values()) == entries
    assert not parsed.skipped
    assert files.render(namespace, list(parsed.entries.values())) == text
    lines = text.split("\n")
    for key, (first, last) in parsed.lines.items():
        assert lines[first - 1].startswith("## ") and lines[last - 1] == "```", key


@given(namespaces)
def test_each_namespace_has_an_allowed_file_of_its_own(namespace: tuple[str, ...]) -> None:
    rel = files.file_of(namespace)
    assert files.is_store_file(rel) and allowed(rel), rel
    assert files.file_of((*namespace, "x")) != rel


def test_a_file_without_the_header_is_not_a_store_file() -> None:
    assert files.parse("# my notes\n\n- a bullet\n") is None
    assert files.parse("") is None


def test_filters() -> None:
    value = {"n": 5, "s": "b", "nested": {"x": 1}, "flag": True}
    assert files.matches_filter(value, None)
    assert files.matches_filter(value, {"n": 5, "nested": {"x": 1}})
    assert files.matches_filter(value, {"n": {"$gt": 4, "$lte": 5}, "s": {"$lt": "c"}})
    assert not files.matches_filter(value, {"n": {"$gt": "4"}})  # a number and a string never order
    assert not files.matches_filter(value, {"flag": {"$gt": 0}})  # nor do booleans
    assert not files.matches_filter(value, {"missing": {"$lt": 1}})
    with pytest.raises(InvalidInput):
        files.matches_filter(value, {"n": {"$regex": "5"}})


def test_text_a_person_put_above_the_header_does_not_hide_the_items() -> None:
    entry = files.Entry("k", {"v": 1}, START, START)
    text = "A note of mine.\n\n" + files.render(("ns",), [entry])
    parsed = files.parse(text)
    assert parsed is not None and parsed.namespace == ("ns",)
    assert list(parsed.entries.values()) == [entry]
    first, last = parsed.lines["k"]
    assert text.split("\n")[first - 1] == "## k" and text.split("\n")[last - 1] == "```"
