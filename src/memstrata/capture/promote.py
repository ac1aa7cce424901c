"""Which capture entries become long-term facts, and which fact a correction closes.

``durable_facts(entries)`` turns the entries of one message into facts: one
per sentence that holds a ``proper_noun``, ``preference`` or ``remember``
entry or a ``correction`` (the seed's durable categories plus corrections).
A sentence with several categories is one fact; its category is the first
of ``proper_noun, preference, remember, decision, specific_value`` it holds,
else ``correction``. But a sentence that joins independent statements ("My
name is Sarvar and I prefer dark mode") is cut into its clauses when each
clause, scanned alone, holds a durable category: each clause is then a fact
of its own, so that a later correction of the name leaves the preference live.
Corrections are never cut.

``corrected_item(fact, items)`` finds, deterministically and without a
model, the live item a correction replaces:

1. the values the sentence negates ("…, not Sarvar", "не Сарвар",
   "Sarvar emas", "不是Sarvar") — an item that contains one is a candidate;
2. otherwise an item sharing at least two content words with the sentence,
   covering at least half of the item's content words, is a candidate;
3. among candidates the most shared words win, then the same category, then
   the newest. An item that already says the corrected text is never chosen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..model import Item
from .scan import Entry

__all__ = ["DURABLE", "Fact", "corrected_item", "durable_facts"]

DURABLE = ("proper_noun", "preference", "remember")
_CATEGORY_ORDER = (*DURABLE, "decision", "specific_value")
_NEGATED = (
    re.compile(r"\bnot\s+(?:the\s+|a\s+|an\s+|my\s+)?([^\s,;!?]+)", re.I),
    re.compile(r"(?:\bа\s+)?\bне\s+([^\s,;!?]+)", re.I),
    re.compile(r"([^\s,;!?]+)\s+emas\b", re.I),
    re.compile(r"不是\s*([^\s，。,.！!；;、？?]+)"),
)
_WORD = re.compile(r"[^\W_]+(?:['’ʻ][^\W_]+)*")
_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_RANGES}]")
_LETTER = f"[^\\W{_CJK_RANGES}]"
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "it's",
        "that",
        "this",
        "these",
        "those",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "with",
        "as",
        "by",
        "i",
        "me",
        "you",
        "he",
        "she",
        "they",
        "we",
        "actually",
        "no",
        "nope",
        "not",
        "sorry",
        "wait",
        "oops",
        "meant",
        "mean",
        "correction",
        "correct",
        "wrong",
        "i'm",
        "im",
        "ok",
        "okay",
        "so",
        "just",
        "really",
        "это",
        "не",
        "а",
        "на",
        "самом",
        "деле",
        "вообще-то",
        "я",
        "имел",
        "имела",
        "в",
        "виду",
        "точнее",
        "aslida",
        "emas",
        "bu",
        "u",
        "men",
    ]
)
_CJK_MARKERS = re.compile(r"其实|不是|是|我|的|了|，|。")


# Where one statement ends and the next begins inside a sentence: a conjunction
# or comma before a first-person subject, a semicolon, a Chinese comma.
_CLAUSE_BREAK = re.compile(
    r"\s*[,;]\s*(?:and|but)\s+"
    r"|\s+(?:and|but)\s+(?=(?:i|i'm|my|we|our)\b)"
    r"|\s*;\s*"
    r"|\s*,\s*(?=(?:i|i'm|my|we|our)\b)"
    r"|\s*,?\s+(?:и|а)\s+(?=(?:я|мне|меня|мой|моя|моё|мы|наш)\b)"
    r"|\s+va\s+(?=(?:men|menga|meni|mening|biz)\b)"
    r"|[，；]",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Fact:
    """A sentence, or a clause of one, to keep as a long-term item."""

    text: str
    category: str
    correction: bool
    span: tuple[int, int]  # of the sentence in the message
    categories: frozenset[str]  # the entries of the sentence this fact stands for


Rescan = Callable[[str], Sequence[Entry]]


def durable_facts(entries: Sequence[Entry], rescan: Rescan | None = None) -> list[Fact]:
    """The facts of one message's entries, in message order; ``rescan`` (the
    scanner) lets a sentence of independent statements be cut into clauses."""
    by_sentence: dict[tuple[int, int], list[Entry]] = {}
    for entry in entries:
        by_sentence.setdefault(entry.span, []).append(entry)
    facts = []
    for group in by_sentence.values():
        categories = frozenset(entry.category for entry in group)
        correction = "correction" in categories
        if not correction and not categories & set(DURABLE):
            continue
        span, text = group[0].span, group[0].text
        clauses = None if correction or rescan is None else _clauses(text, categories, rescan)
        if clauses:
            facts += [Fact(t, _category(c), False, span, c) for t, c in clauses]
        else:
            facts.append(Fact(text, _category(categories), correction, span, categories))
    return facts


def _category(categories: Iterable[str]) -> str:
    return next((c for c in _CATEGORY_ORDER if c in categories), "correction")


def _clauses(
    sentence: str, categories: frozenset[str], rescan: Rescan
) -> list[tuple[str, frozenset[str]]] | None:
    """The clauses of ``sentence`` with the categories each holds alone, when
    there are several, each holds a durable one, and together they hold exactly
    the categories of the sentence; else None."""
    pieces = [piece.strip() for piece in _CLAUSE_BREAK.split(sentence)]
    pieces = [piece for piece in pieces if piece]
    if len(pieces) < 2:
        return None
    out = []
    for piece in pieces:
        found = frozenset(entry.category for entry in rescan(piece))
        if not found & set(DURABLE):
            return None
        out.append((piece, found))
    if frozenset().union(*(found for _, found in out)) != categories:
        return None
    return out


def _negated_values(text: str) -> list[str]:
    values = []
    for pattern in _NEGATED:
        for match in pattern.finditer(text):
            value = match.group(1).strip(".…'\"“”«»")
            if value and value.casefold() not in _STOP:
                values.append(value)
    return values


def _words(text: str) -> set[str]:
    folded = text.casefold()
    words = {w for w in _WORD.findall(folded) if w not in _STOP and not _CJK.search(w)}
    cjk = "".join(_CJK.findall(_CJK_MARKERS.sub(" ", folded)))
    words.update(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return words


def _contains(haystack: str, value: str) -> bool:
    """``value`` occurs in ``haystack`` as a whole word (a CJK character is no
    letter of a Latin or Cyrillic word: "我叫Sarvar" holds "Sarvar")."""
    if _CJK.search(value):
        return value in haystack
    pattern = rf"(?<!{_LETTER}){re.escape(value)}(?!{_LETTER})"
    return re.search(pattern, haystack, re.I) is not None


def corrected_item(fact: Fact, items: Iterable[Item], user: str | None = None) -> Item | None:
    """The live item ``fact`` (a correction) replaces, if one is found."""
    negated = _negated_values(fact.text)
    words = _words(fact.text)
    if not words and not negated:
        return None
    best: tuple[int, bool, datetime, str] | None = None
    chosen: Item | None = None
    for item in items:
        if not item.is_live or (user is not None and item.user not in (None, user)):
            continue
        if any(_contains(item.text, value) for value in negated):
            shared = len(words & _words(item.text)) + 2
        else:
            own = _words(item.text)
            shared = len(words & own)
            if shared < 2 or shared * 2 < len(own):
                continue
        if item.text.casefold() in fact.text.casefold():
            continue
        rank = (shared, item.category == fact.category, item.updated_at, item.id)
        if best is None or rank > best:
            best, chosen = rank, item
    return chosen
