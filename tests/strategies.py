"""Hypothesis strategies shared by the round-trip tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from memstrata import InvalidInput, Item, Source
from memstrata.model import CATEGORY_TITLES, clean_text, new_item_id, normalize_category

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _clean(raw: str) -> str | None:
    try:
        return clean_text(raw)
    except InvalidInput:
        return None


def _category(raw: str) -> str | None:
    try:
        return normalize_category(raw)
    except InvalidInput:
        return None


texts = st.text(min_size=1, max_size=60).map(_clean).filter(lambda text: text is not None)
categories = st.one_of(
    st.sampled_from(sorted(CATEGORY_TITLES)),
    st.text(min_size=1, max_size=20).map(_category).filter(lambda c: c is not None),
)


@st.composite
def memory_items(draw: st.DrawFn) -> Item:
    """Any storable item: any text and category, live or superseded."""
    offset = timedelta(seconds=draw(st.integers(0, 10**8)))
    archived = draw(st.booleans())
    return Item(
        id=new_item_id(),
        text=draw(texts),
        category=draw(categories),
        source=draw(st.sampled_from(list(Source))),
        session=draw(st.none() | st.text(min_size=1, max_size=10).map(_clean)),
        created_at=EPOCH + offset,
        updated_at=EPOCH + offset * 2,
        hits=draw(st.integers(0, 1000)),
        valid_from=EPOCH + offset,
        valid_to=EPOCH + offset * 3 if archived else None,
        superseded_by=new_item_id() if archived else None,
    )


item_lists = st.lists(memory_items(), max_size=25, unique_by=lambda item: item.id)
