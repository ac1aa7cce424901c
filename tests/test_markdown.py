"""MEMORY.md: render/parse round trips, hand-written files, corruption."""

from __future__ import annotations

from hypothesis import given, settings

from memstrata import Item, Source
from memstrata.index.chunks import memory_md_lines
from memstrata.stores import markdown
from memstrata.stores.longterm import LongTermStore, items_from_markdown
from strategies import EPOCH, item_lists


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


@settings(max_examples=200)
@given(item_lists)
def test_render_lines_are_the_lines_a_scan_of_the_text_finds(generated: list[Item]) -> None:
    text, lines = markdown.render_lines(generated)
    assert text == markdown.render(generated)
    assert lines == memory_md_lines(text)
    assert set(lines) == {item.id for item in generated}


@settings(max_examples=100)
@given(item_lists)
def test_items_already_in_order_render_as_sorted_ones(generated: list[Item]) -> None:
    ordered = sorted(generated, key=lambda item: (item.created_at, item.id))
    assert markdown.render_lines(ordered, in_order=True) == markdown.render_lines(generated)
    text = markdown.render(generated)
    for items in (generated, ordered):  # the store knows whether they are in order
        store = LongTermStore()
        store.reset({item.id: item for item in items}, 0)
        assert store.render_lines() == (text.encode(), memory_md_lines(text))
