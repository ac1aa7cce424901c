"""Relative time words of a transcript turn resolved against the day it was
said, as words indexed beside it (issue 16): "I went to the support group
yesterday", said on 8 May 2023, is also found as "7 May 2023" and "May 2023"
("last week" and "next month" give a month, "last year" a year). The turn's
text, snippet and vector are unchanged; only what BM25 reads
(``Chunk.words``) gains them.

English only; the day is the turn's ``created_at`` in UTC (a turn written
late at night in a zone far from UTC may resolve one day off). Each rule is a
pattern and what it gives; a phrase no rule knows adds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

__all__ = ["month_of", "resolved_dates"]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple": 2,
    "few": 3,
    "several": 3,
}
_SHIFT = {"last": -1, "this": 0, "next": 1}


def _day(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _month(day: date, shift: int = 0) -> str:
    months = day.year * 12 + day.month - 1 + shift
    return f"{MONTHS[months % 12]} {months // 12}"


def month_of(day: date) -> str:
    """The month ``day`` is in, as indexed beside every dated transcript turn
    ("May 2023"): a question that names the month also finds, by its words,
    what was said then (issue 16; the date factor raises only the candidates)."""
    return _month(day)


def _weekday(match: re.Match[str], day: date) -> str:
    target = _WEEKDAYS.index(match[2])
    if match[1] == "next":
        return _day(day + timedelta(days=(target - day.weekday()) % 7 or 7))
    return _day(day - timedelta(days=(day.weekday() - target) % 7 or 7))


def _ago(match: re.Match[str], day: date) -> str:
    count = int(match[1]) if match[1].isdigit() else _COUNTS[match[1]]
    unit = match[2]
    if unit == "day":
        return _day(day - timedelta(days=count))
    if unit == "week":
        return _month(day - timedelta(days=7 * count))
    if unit == "month":
        return _month(day, -count)
    return str(day.year - count)


_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], date], str]], ...] = (
    (re.compile(r"\byesterday\b|\blast night\b"), lambda m, d: _day(d - timedelta(days=1))),
    (
        re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b"),
        lambda m, d: _day(d),
    ),
    (re.compile(r"\btomorrow\b"), lambda m, d: _day(d + timedelta(days=1))),
    (
        re.compile(r"\b(last|next|this) (?:week|weekend)\b"),
        lambda m, d: _month(d + timedelta(days=7 * _SHIFT[m[1]])),
    ),
    (
        re.compile(r"\b(last|next|this) month\b"),
        lambda m, d: _month(d, _SHIFT[m[1]]),
    ),
    (
        re.compile(r"\b(last|next|this) year\b"),
        lambda m, d: str(d.year + _SHIFT[m[1]]),
    ),
    (re.compile(rf"\b(last|this|next|on) ({'|'.join(_WEEKDAYS)})\b"), _weekday),
    (
        re.compile(
            rf"\b(\d+|{'|'.join(_COUNTS)})(?: of)? (day|week|month|year)s? ago\b",
        ),
        _ago,
    ),
)
# Any rule's trigger, as a substring of the lower-cased text: one cheap scan
# (no IGNORECASE, no word bounds) before the rules themselves.
_ANY = re.compile(
    "|".join(
        ("yesterday", "last", "next", "this", "today", "tonight", "tomorrow", "ago", *_WEEKDAYS)
    )
)


def resolved_dates(text: str, day: date) -> list[str]:
    """The dates the relative time words of ``text`` name when said on
    ``day`` ("7 May 2023", "May 2023", "2022"), each once, in rule order; a
    resolved day is followed by its month."""
    text = text.lower()  # the rules are lower-case (IGNORECASE is ~20x slower)
    if not _ANY.search(text):  # most turns: nothing to resolve
        return []
    found: dict[str, None] = {}
    for pattern, resolve in _RULES:
        for match in pattern.finditer(text):
            words = resolve(match, day)
            found.setdefault(words, None)
    for words in list(found):
        parts = words.split()
        if len(parts) == 3:
            found.setdefault(f"{parts[1]} {parts[2]}", None)
    return list(found)
