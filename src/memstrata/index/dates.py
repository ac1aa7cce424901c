"""Dates named in a query ("on October 13, 2023", "13 Oct 2023", "2023-10-13",
"in May 2023"), for the search's date boost: a chunk written on a day the
query names (or in a month it names) ranks higher. English month names and
ISO dates only; a bare year is too vague to use."""

from __future__ import annotations

import re
from datetime import date

__all__ = ["DateMention", "dates_in"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_PATTERNS = (
    # October 13, 2023 / Oct 13th 2023
    re.compile(
        rf"\b(?P<m>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", re.I
    ),
    # 13 October, 2023 / 1st of February 2023
    re.compile(
        rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m>{_MONTH})\.?,?\s+(?P<y>\d{{4}})\b",
        re.I,
    ),
    # 2023-10-13
    re.compile(r"\b(?P<y>\d{4})-(?P<mn>\d{1,2})-(?P<d>\d{1,2})\b"),
    # May 2023 / in October, 2023 (a month)
    re.compile(rf"\b(?P<m>{_MONTH})\.?,?\s+(?P<y>\d{{4}})\b", re.I),
)


class DateMention(tuple[int, int, int | None]):
    """(year, month, day or None)."""

    def matches(self, day: date) -> int:
        """2 for the same day, 1 for the same month (of a month-only mention), else 0."""
        year, month, dom = self
        if (day.year, day.month) != (year, month):
            return 0
        if dom is None:
            return 1
        return 2 if day.day == dom else 0


def dates_in(text: str) -> list[DateMention]:
    """The dates ``text`` names, each once (a full date hides its own month)."""
    found: list[DateMention] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(start <= match.start() < end for start, end in taken):
                continue
            groups = match.groupdict()
            month = _MONTHS[groups["m"].lower()] if groups.get("m") else int(groups["mn"])
            day = int(groups["d"]) if groups.get("d") else None
            try:
                date(int(groups["y"]), month, day or 1)
            except ValueError:
                continue
            taken.append(match.span())
            mention = DateMention((int(groups["y"]), month, day))
            if mention not in found:
                found.append(mention)
    return found
