"""SESSION-STATE.md: line format, the size bound, hand edits, torn lines, round trips."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.capture.scan import CATEGORIES
from memstrata.storage.volume import DiskVolume
from memstrata.stores import session_state
from memstrata.stores.session_state import HEADER, MAX_ENTRY_CHARS, StateEntry, parse_state

T0 = datetime(2025, 1, 15, 10, 30, tzinfo=UTC)
OLDEST = datetime.min.replace(tzinfo=UTC)


def _entry(n: int, text: str | None = None, category: str = "remember") -> StateEntry:
    return StateEntry(T0 + timedelta(minutes=n), category, text or f"entry number {n}")


def append_entries(path: Path, entries: list[StateEntry], max_chars: int) -> None:
    """``session_state.append_entries`` on the file ``path`` (its folder a volume)."""
    session_state.append_entries(DiskVolume(path.parent), path.name, entries, max_chars)


def _read(path: Path) -> list[StateEntry]:
    return parse_state(path.read_text(encoding="utf-8"))


def test_an_entry_is_one_line_in_the_seed_format() -> None:
    entry = StateEntry(T0, "proper_noun", "My name is\n  Sardor\t(really)")
    assert (
        entry.render()
        == "- [2025-01-15T10:30:00+00:00] **proper_noun**: My name is Sardor (really)\n"
    )
    tashkent = timezone(timedelta(hours=5))
    at = datetime(2025, 1, 15, 15, 30, 0, 999_999, tzinfo=tashkent)
    assert StateEntry(at, "x", "y").render() == "- [2025-01-15T15:30:00+05:00] **x**: y\n"


def test_a_long_entry_is_shortened() -> None:
    line = StateEntry(T0, "remember", "ab " * 400).render()
    text = line.split("**: ", 1)[1].rstrip("\n")
    assert len(text) == MAX_ENTRY_CHARS and text.endswith("…")
    assert line.count("\n") == 1


def test_appends_create_the_file_with_its_header(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "s1" / "SESSION-STATE.md"  # the folder is made too
    append_entries(path, [_entry(0), _entry(1)], 8000)
    append_entries(path, [_entry(2)], 8000)
    append_entries(path, [], 8000)  # nothing to append: nothing written
    text = path.read_text(encoding="utf-8")
    assert text.startswith(HEADER) and text.count(HEADER) == 1
    assert [e.text for e in _read(path)] == [f"entry number {n}" for n in range(3)]
    assert text == HEADER + "".join(_entry(n).render() for n in range(3))


def test_a_hand_written_line_is_an_entry() -> None:
    text = HEADER + "- some note\n" + _entry(0).render() + "not an entry\n-no space\n"
    assert parse_state(text) == [StateEntry(OLDEST, "note", "some note"), _entry(0)]


def test_a_bad_time_and_a_naive_time_are_read(tmp_path: Path) -> None:
    text = "- [yesterday] **note**: a\n- [2025-01-15T10:30:00] **note**: b\n"
    assert parse_state(text) == [
        StateEntry(OLDEST, "note", "a"),
        StateEntry(T0, "note", "b"),  # no zone: UTC
    ]


def test_untimed_hand_written_lines_are_trimmed_first(tmp_path: Path) -> None:
    path = tmp_path / "SESSION-STATE.md"
    append_entries(path, [_entry(0), _entry(1)], 10_000)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("- a note a person added\n")
    line = len(_entry(9).render().encode())
    append_entries(path, [_entry(2)], len(HEADER) + 3 * line)  # room for three lines
    assert [e.text for e in _read(path)] == [f"entry number {n}" for n in range(3)]


def test_a_torn_last_line_does_not_swallow_the_next_entry(tmp_path: Path) -> None:
    path = tmp_path / "SESSION-STATE.md"
    torn = _entry(0).render().rstrip("\n")[:-4]  # a writer died mid-line
    path.write_text(HEADER + _entry(-1).render() + torn, encoding="utf-8")
    append_entries(path, [_entry(1)], 8000)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[-1] == _entry(1).render().rstrip("\n")
    assert lines[-2] == torn
    assert _read(path)[-1] == _entry(1)
    assert len(_read(path)) == 3


def test_the_newest_entry_is_kept_even_when_it_alone_is_too_big(tmp_path: Path) -> None:
    path = tmp_path / "SESSION-STATE.md"
    append_entries(path, [_entry(0), _entry(1)], 8000)
    append_entries(path, [_entry(2, "x" * 400)], 100)
    assert _read(path) == [_entry(2, "x" * 400)]


# -- properties ------------------------------------------------------------------------

texts = st.text(min_size=1, max_size=80).filter(lambda t: t.split() != [])
entry_parts = st.tuples(texts, st.sampled_from(CATEGORIES))
long_texts = st.text(min_size=490, max_size=700).filter(lambda t: t.split() != [])
offsets = st.integers(-12 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


def _normal(entry: StateEntry) -> StateEntry:
    """What reading ``entry`` back gives (checked on its own by the round-trip test)."""
    [read] = parse_state(entry.render())
    return read


@settings(max_examples=40, deadline=None)
@given(
    max_chars=st.integers(len(HEADER) + 1, 700),
    batches=st.lists(st.lists(entry_parts, min_size=1, max_size=3), min_size=1, max_size=20),
    zone=offsets,
)
def test_the_file_stays_bounded_and_keeps_the_newest(
    max_chars: int, batches: list[list[tuple[str, str]]], zone: timezone
) -> None:
    written: list[StateEntry] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "SESSION-STATE.md"
        for batch in batches:
            entries = []
            for text, category in batch:
                at = (T0 + timedelta(seconds=len(written))).astimezone(zone)
                entries.append(StateEntry(at, category, text))
                written.append(entries[-1])
            append_entries(path, entries, max_chars)

            data = path.read_bytes()
            kept = parse_state(data.decode("utf-8"))
            assert data.startswith(HEADER.encode())
            assert kept, "the newest entry is always kept"
            assert kept == [_normal(e) for e in written[-len(kept) :]], "oldest go first"
            assert len(data) <= max_chars or kept == [_normal(written[-1])]
            if len(kept) < len(written):  # what was dropped would not have fitted
                dropped = written[-len(kept) - 1]
                assert len(data) + len(dropped.render().encode()) > max_chars


@settings(max_examples=200)
@given(
    parts=st.lists(
        st.tuples(texts | long_texts, st.sampled_from((*CATEGORIES, "note"))), max_size=8
    ),
    seconds=st.integers(0, 10**9),
    zone=offsets,
    micro=st.integers(0, 999_999),
)
def test_parse_reads_back_what_render_wrote(
    parts: list[tuple[str, str]], seconds: int, zone: timezone, micro: int
) -> None:
    at = (T0 + timedelta(seconds=seconds, microseconds=micro)).astimezone(zone)
    entries = [StateEntry(at, category, text) for text, category in parts]
    parsed = parse_state(HEADER + "".join(entry.render() for entry in entries))
    assert len(parsed) == len(entries)
    for entry, read in zip(entries, parsed, strict=True):
        assert read.at == at.replace(microsecond=0)
        assert read.at.utcoffset() == at.utcoffset()
        assert read.category == entry.category
        one_line = " ".join(entry.text.split())
        if len(one_line) <= MAX_ENTRY_CHARS:
            assert read.text == one_line
        else:
            assert read.text.endswith("…") and len(read.text) <= MAX_ENTRY_CHARS
            assert one_line.startswith(read.text[:-1])
        assert read.render() == entry.render()  # a second round changes nothing
