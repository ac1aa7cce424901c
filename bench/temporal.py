"""Relative time words of a turn resolved against its session's date, as words
to index beside it ("yesterday" on 8 May 2023 -> "7 May 2023 May 2023")."""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTH_TEXT = (
    "January February March April May June July August September October November December"
)
MONTHS = _MONTH_TEXT.split()
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUM = {
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
    "few": 3,
    "couple": 2,
    "several": 3,
}


def _day(d: date) -> list[str]:
    return [f"{d.day} {MONTHS[d.month - 1]} {d.year}"]


def _month(year: int, month: int) -> list[str]:
    while month < 1:
        month, year = month + 12, year - 1
    while month > 12:
        month, year = month - 12, year + 1
    return [f"{MONTHS[month - 1]} {year}"]


def _add_months(d: date, n: int) -> tuple[int, int]:
    m = d.month - 1 + n
    return d.year + m // 12, m % 12 + 1


_RULES: list[tuple[re.Pattern[str], object]] = []


def rule(pattern: str):  # type: ignore[no-untyped-def]
    def wrap(fn):  # type: ignore[no-untyped-def]
        _RULES.append((re.compile(pattern, re.I), fn))
        return fn

    return wrap


@rule(r"\byesterday\b|\blast night\b")
def _yesterday(m, d):  # type: ignore[no-untyped-def]
    return _day(d - timedelta(days=1))


@rule(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b")
def _today(m, d):  # type: ignore[no-untyped-def]
    return _day(d)


@rule(r"\btomorrow\b")
def _tomorrow(m, d):  # type: ignore[no-untyped-def]
    return _day(d + timedelta(days=1))


@rule(r"\b(last|next|this) (week|weekend)\b")
def _week(m, d):  # type: ignore[no-untyped-def]
    shift = {"last": -7, "next": 7, "this": 0}[m[1].lower()]
    day = d + timedelta(days=shift)
    return _month(day.year, day.month)


@rule(r"\b(last|next|this) month\b")
def _monthrel(m, d):  # type: ignore[no-untyped-def]
    return _month(*_add_months(d, {"last": -1, "next": 1, "this": 0}[m[1].lower()]))


@rule(r"\b(last|next|this) year\b")
def _year(m, d):  # type: ignore[no-untyped-def]
    return [str(d.year + {"last": -1, "next": 1, "this": 0}[m[1].lower()])]


@rule(r"\b(last|this|next|on) (" + "|".join(WEEKDAYS) + r")\b")
def _weekday(m, d):  # type: ignore[no-untyped-def]
    target = WEEKDAYS.index(m[2].lower())
    if m[1].lower() == "next":
        ahead = (target - d.weekday()) % 7 or 7
        return _day(d + timedelta(days=ahead))
    back = (d.weekday() - target) % 7 or 7
    return _day(d - timedelta(days=back))


@rule(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple|several)"
    r"(?: of)? (day|week|month|year)s? ago\b"
)
def _ago(m, d):  # type: ignore[no-untyped-def]
    n = int(m[1]) if m[1].isdigit() else _NUM[m[1].lower()]
    unit = m[2].lower()
    if unit == "day":
        return _day(d - timedelta(days=n))
    if unit == "week":
        day = d - timedelta(days=7 * n)
        return _month(day.year, day.month)
    if unit == "month":
        return _month(*_add_months(d, -n))
    return [str(d.year - n)]


def expand_dates(text: str, session_day: date) -> list[str]:
    """The resolved dates of the relative time words in ``text``, each once."""
    out: list[str] = []
    for pattern, fn in _RULES:
        for m in pattern.finditer(text):
            for words in fn(m, session_day):  # type: ignore[operator]
                if words not in out:
                    out.append(words)
    # a resolved day also names its month
    for words in list(out):
        parts = words.split()
        if len(parts) == 3:
            month = f"{parts[1]} {parts[2]}"
            if month not in out:
                out.append(month)
    return out
