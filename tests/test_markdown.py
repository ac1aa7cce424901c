"""MEMORY.md: render/parse round trips, hand-written files, corruption."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import InvalidInput, Item, Source
from memstrata.model import CATEGORY_TITLES, clean_text, new_item_id, normalize_category
from memstrata.store import markdown
from memstrata.store.longterm import items_from_markdown

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
def items(draw: st.DrawFn) -> Item:
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
    )


item_lists = st.lists(items(), max_size=25, unique_by=lambda item: item.id)


def _shape(item: Item) -> tuple[str, str, str | None, bool]:
    return (item.id, item.text, item.category if item.is_live else None, not item.is_live)


@settings(max_examples=200)
@given(item_lists)
def test_parse_gives_back_what_render_wrote(generated: list[Item]) -> None:
    parsed = markdown.parse(markdown.render(generated).encode())
    assert parsed.bad == []
    found = {(line.item_id, line.text, line.category, line.archived) for line in parsed.lines}
    assert found == {_shape(item) for item in generated}


@settings(max_examples=100)
@given(item_lists)
def test_render_is_deterministic(generated: list[Item]) -> None:
    assert markdown.render(generated) == markdown.render(list(reversed(generated)))


@given(item_lists)
def test_items_rebuilt_from_markdown_alone_keep_ids_text_and_sections(
    generated: list[Item],
) -> None:
    live_keys: set[str] = set()
    unique = []
    for item in generated:
        if item.is_live and item.key in live_keys:
            continue
        if item.is_live:
            live_keys.add(item.key)
        unique.append(item)
    rebuilt = items_from_markdown(markdown.parse(markdown.render(unique).encode()), at=EPOCH)
    assert {_shape(item) for item in rebuilt.values()} == {_shape(item) for item in unique}
    assert all(item.source is Source.IMPORT for item in rebuilt.values())


def test_hand_written_file_is_read_leniently() -> None:
    text = (
        "# My memory\n"
        "Some prose that is not a fact.\n"
        "- loose fact before any section\n"
        "## Preferences\n"
        "* likes tea ^mabcdefgh\n"
        "+ likes green tea\n"
        "-\n"
        "### Travel plans ###\n"
        "   - Lisbon in May\n"
        "## Archive\n"
        "- ~~old fact~~ ^mzzzzzzzz\n"
    )
    lines = markdown.parse(text.encode()).lines
    got = [(line.text, line.item_id, line.category, line.archived) for line in lines]
    assert got == [
        ("loose fact before any section", None, "fact", False),
        ("likes tea", "mabcdefgh", "preference", False),
        ("likes green tea", None, "preference", False),
        ("Lisbon in May", None, "Travel plans", False),
        ("old fact", "mzzzzzzzz", None, True),
    ]


def test_invalid_utf8_lines_are_reported_with_their_id_not_dropped() -> None:
    data = b"## Facts\n- good ^mabcdefgh\n- bad \xff\xfe bytes ^mbbbbbbbb\n"
    parsed = markdown.parse(data)
    assert [line.text for line in parsed.lines] == ["good"]
    assert len(parsed.bad) == 1
    assert parsed.bad[0].raw == b"- bad \xff\xfe bytes ^mbbbbbbbb"
    assert parsed.bad[0].item_id == "mbbbbbbbb"
    assert parsed.bad[0].line_no == 3
