"""A pattern's matches at every position where one starts, for the scanner.

``finditer`` goes on after a match's end, so a match that is then spoiled
(its rule's ``unless``, a quotation) would hide every match starting inside
it. ``every_start`` goes on one past the match's start instead; the consumer
``send``s a position to skip further (``go_on``: past a vetoed sentence).
"""

from __future__ import annotations

import re
from collections.abc import Generator

__all__ = ["Stream", "every_start", "go_on"]

# The matches of a pattern; ``send(pos)`` goes on at ``pos`` (no less than one
# past the last match's start) instead of at the next position.
Stream = Generator[re.Match[str], int | None, None]


def every_start(pattern: re.Pattern[str], text: str) -> Stream:
    """The pattern's match at each position where one starts, in order: as
    ``finditer``, but the next search starts one past the last match's start,
    not at its end (a match spoiled for its own rule hides none inside it),
    unless ``send`` says where."""
    pos, last = 0, len(text)
    while pos <= last and (match := pattern.search(text, pos)) is not None:
        pos = (yield match) or match.start() + 1


def go_on(matches: Stream, pos: int) -> re.Match[str] | None:
    """The stream's next match at ``pos`` or after (None: no more)."""
    try:
        return matches.send(pos)
    except StopIteration:
        return None
