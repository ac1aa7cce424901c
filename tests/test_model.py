"""Text, category and item rules shared by every writer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata import InvalidInput, Item, Source
from memstrata.model import (
    ID_PATTERN,
    category_title,
    clean_text,
    new_item_id,
    normalize_category,
    normalize_text,
    now,
    parse_time,
)


def test_clean_text_makes_one_line() -> None:
    assert clean_text("  line one\nline two\r\n\u2028three\t ") == "line one line two three"


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", "\x00"])
def test_clean_text_rejects_empty(bad: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        clean_text(bad)


def test_clean_text_rejects_huge_and_non_strings() -> None:
    with pytest.raises(InvalidInput, match="limit"):
        clean_text("x" * 5000)
    with pytest.raises(InvalidInput, match="string"):
        clean_text(42)  # type: ignore[arg-type]


def test_normalize_text_ignores_case_space_and_trailing_punctuation() -> None:
    assert normalize_text("I prefer  Dark mode.") == normalize_text('"i prefer dark MODE"')
    assert normalize_text("Ｉ ｐｒｅｆｅｒ") == "i prefer"  # NFKC full-width
    assert normalize_text("I prefer dark mode") != normalize_text("I prefer light mode")


def test_known_categories_map_titles_and_keys_both_ways() -> None:
    assert normalize_category("Preferences") == "preference"
    assert normalize_category("## preference ##") == "preference"
    assert category_title("preference") == "Preferences"
    assert normalize_category(None) == "fact"
    assert normalize_category("Travel plans") == "Travel plans"


def test_archive_title_is_reserved() -> None:
    with pytest.raises(InvalidInput, match="reserved"):
        normalize_category("Superseded")


@given(st.text(min_size=1, max_size=80))
def test_normalize_category_is_idempotent(raw: str) -> None:
    try:
        once = normalize_category(raw)
    except InvalidInput:
        return
    assert normalize_category(once) == once
    assert normalize_category(category_title(once)) == once


@given(st.text(max_size=200))
def test_clean_text_is_idempotent_and_single_line(raw: str) -> None:
    try:
        once = clean_text(raw)
    except InvalidInput:
        return
    assert clean_text(once) == once
    assert len(once.splitlines()) == 1


def test_new_ids_match_the_pattern_and_differ() -> None:
    ids = {new_item_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(ID_PATTERN.fullmatch(item_id) for item_id in ids)


def test_item_dict_round_trip() -> None:
    at = now()
    item = Item(
        id="mabcdefgh",
        text="Deploys are frozen on Fridays",
        category="decision",
        source=Source.AGENT,
        session="s1",
        created_at=at,
        updated_at=at,
        hits=3,
        valid_from=at,
        valid_to=at,
        superseded_by="mzzzzzzzz",
    )
    assert Item.from_dict(item.to_dict()) == item
    assert not item.is_live


def test_item_from_malformed_dict_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="malformed"):
        Item.from_dict({"id": "x"})


@given(
    stamps=st.lists(
        st.sampled_from(
            [
                "2026-11-25T04:39:31.257912+00:00",
                "2026-11-25T04:39:31.257912",
                "2024-01-01T00:00:00+05:00",
            ]
        ),
        min_size=3,
        max_size=3,
    ),
    valid_from_none=st.booleans(),
)
def test_items_times_read_back_whether_or_not_they_share_one_string(
    stamps, valid_from_none
) -> None:  # type: ignore[no-untyped-def]
    """from_dict parses a time shared by created/updated/valid_from once; each
    still reads back as its own string says (a zone-less one as UTC)."""
    created, updated, valid_from = stamps
    row = {"id": "mabcdefgh", "text": "x", "created_at": created, "updated_at": updated}
    row["valid_from"] = None if valid_from_none else valid_from
    item = Item.from_dict(row)
    assert item.created_at == parse_time(created)
    assert item.updated_at == parse_time(updated)
    assert item.valid_from == (None if valid_from_none else parse_time(valid_from))
    assert Item.from_dict(item.to_dict()) == item
