"""``memory_md_lines``: each fact's line in MEMORY.md, found in one scan of
the text, is the line a line-by-line reading gives."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.index.chunks import memory_md_lines

_ONE_LINE = re.compile(r"\s+\^m[0-9a-z]{8}\s*$")  # the mark as one line is read


def line_by_line(text: str) -> dict[str, int]:
    lines = {}
    for number, line in enumerate(text.split("\n"), start=1):
        mark = _ONE_LINE.search(line)
        if mark:
            lines[mark.group().strip()[1:]] = number
    return lines


_MARK = st.builds(
    lambda tail: "^m" + tail,
    st.text(alphabet="0123456789abcdefghijklmnopqrstuvwxyzA", min_size=7, max_size=9),
)
_PIECE = st.one_of(
    _MARK,
    st.sampled_from(
        [" ", "  ", "\t", "\r", "\n", "\r\n", "\u2028", "\x85", "\xa0", "- ", "fact ", "^", "m"]
    ),
    st.text(max_size=6),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECE, max_size=40))
def test_one_scan_finds_each_fact_on_the_line_a_line_by_line_reading_does(
    pieces: list[str],
) -> None:
    text = "".join(pieces)
    assert memory_md_lines(text) == line_by_line(text)


def test_a_memory_file_s_lines() -> None:
    text = (
        "# Memory\n\n## Preferences\n- dark mode ^mabcdefgh\n- tabs, not spaces  ^m12345678 \r\n"
        "^mnotamark\n- two marks ^maaaaaaaa ^mbbbbbbbb\n- a mark ^mcccccccc in the middle\n"
        "- last ^mdddddddd"
    )
    assert memory_md_lines(text) == {
        "mabcdefgh": 4,
        "m12345678": 5,
        "mbbbbbbbb": 7,
        "mdddddddd": 9,
    }
