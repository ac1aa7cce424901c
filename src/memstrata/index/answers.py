"""The answer type of a question (hybrid search's step 4): a "when" question
raises chunks that say when something happened, "how many / much / often /
long" ones a number, "where" ones a place, "who" ones a name. Which type a
query asks for is read from its first words (``answer_type``); whether a
chunk holds one is read once per chunk and type and kept in ``Index.marks``
(``says``). A question that gathers what was said over many sessions
("What books has John read?") is told apart by ``gathers``. The patterns are
compiled once, at import."""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from functools import lru_cache

__all__ = ["answer_type", "gathers", "says"]

_HOW_MANY = re.compile(r"^\s*how (?:many|much|often|long)\b", re.I)
_WHERE = re.compile(r"^\s*where\b", re.I)
_WHO = re.compile(r"^\s*(?:who|whom|whose)\b", re.I)
_NAME = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+")
_NUMBER = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twice|once|dozen|few|several)\b",
    re.I,
)
_PLACE = re.compile(r"\b(?:in|at|to|from|near)\s+(?:the\s+)?[A-Z][a-z]+")
_WHEN_QUERY = re.compile(r"^\s*when\b|\bwhat (?:day|date|month|year|time)\b|\bhow long ago\b", re.I)
_TIME_WORDS = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|ago|this (?:week|month|year|weekend|morning)"
    r"|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march"
    r"|april|may|june|july|august|september|october|november|december|\d{4}|recently|soon)\b",
    re.I,
)
_ANSWERS = (_TIME_WORDS, _NUMBER, _PLACE, _NAME)
# "both", "in common", "how many times", "What books has ...", "Which cities
# have ...", "What activities ...": on LoCoMo 65 of the 78 questions it takes
# are multi-hop ones (their evidence in several sessions), 9 single-hop.
_GATHERS = re.compile(
    r"\bboth\b|\bin common\b|\bhow many times\b"
    r"|^\s*(?:what|which)\s+(?:\w+\s+)?\w+s\s+(?:has|have|does|do|did)\b"
    r"|^\s*what (?:\w+ )?(?:activities|things|books|events|places|hobbies|items|types|kinds)\b",
    re.I,
)


@lru_cache(maxsize=256)  # a search asks it twice (expansion, factors), ``why`` once more
def answer_type(query: str) -> int | None:
    """What a chunk that answers ``query`` is likely to hold, by its question
    word: a place in ``_ANSWERS``."""
    if _WHEN_QUERY.search(query):
        return 0
    if _HOW_MANY.search(query):
        return 1
    if _WHERE.search(query):
        return 2
    if _WHO.search(query):
        return 3
    return None


def gathers(query: str) -> bool:
    """Whether ``query`` gathers things said at several times (its answer is
    spread over sessions), by its form."""
    return _GATHERS.search(query) is not None


def says(marks: MutableMapping[int, int], cid: int, text: str, kind: int) -> bool:
    """Whether chunk ``cid`` holds what answer type ``kind`` looks for, read
    once per chunk and kind (``Index.marks``: bit ``kind`` = known, bit
    ``kind + 4`` = found)."""
    known = marks.get(cid, 0)
    if not known & (1 << kind):
        found = 16 << kind if _ANSWERS[kind].search(text) else 0
        known |= (1 << kind) | found
        marks[cid] = known
    return bool(known & (16 << kind))
