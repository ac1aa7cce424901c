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
Corrections are never cut. A clause that holds no durable category is kept
with the durable clause before it (or after it, when it comes first): "I'm
Alice and I work on the payments team" stays one fact. A greeting or filler
clause ("Hi", "Hello there", "Привет", "Salom", "你好") holds no fact and is
left out of it: "Hi, I'm Alice and I work on the payments team." keeps
"I'm Alice and I work on the payments team.".

A fact whose content is only a redaction (``redaction_only``: "my staging
password is [REDACTED:password]" -- the value it states is the secret) carries
nothing: it is no long-term fact (the capture stays in the session state).

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
from typing import Any

from ..model import Item
from .scan import Entry

__all__ = ["DURABLE", "Fact", "corrected_item", "durable_facts", "redaction_only"]

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


# A redaction that is the value a statement gives: after a copula or a colon.
_REDACTED_VALUE = re.compile(
    r"(?:\b(?:is|are|was|were|equals|это|bu)\b|[=:：—–]|是|为)\s*[\"'“«]?\[REDACTED:[^\]]*\]",
    re.IGNORECASE,
)
_REDACTION = re.compile(r"\[REDACTED:[^\]]*\]")
# Greetings and fillers: a clause made of these (a name may follow a greeting) holds no fact.
_GREETINGS = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "hiya",
        "greetings",
        "morning",
        "afternoon",
        "evening",
        "thanks",
        "thank",
        "ok",
        "okay",
        "well",
        "so",
        "yes",
        "yeah",
        "sure",
        "oh",
        "btw",
        "привет",
        "здравствуйте",
        "здравствуй",
        "добрый",
        "утро",
        "день",
        "вечер",
        "спасибо",
        "салют",
        "итак",
        "ну",
        "salom",
        "assalomu",
        "alaykum",
        "rahmat",
        "hayrli",
        "tong",
        "kun",
        "kech",
        "xo'sh",
    ]
)
_LEADING = re.compile(r"([^,，]{1,40}?)\s*[,，]\s*(?=\S)")
_CJK_GREETINGS = ("你好", "您好", "嗨", "谢谢", "早上好", "晚上好", "大家好")


def redaction_only(text: str) -> bool:
    """Whether ``text`` states nothing but a redacted value (see the module):
    a redaction after a copula or colon, or no letter or digit left without
    its redactions."""
    if "[REDACTED:" not in text:
        return False
    if _REDACTED_VALUE.search(text):
        return True
    return not any(char.isalnum() for char in _REDACTION.sub("", text))


def _filler(piece: str) -> bool:
    """A greeting or filler clause: "Hi", "Hello there", "Good morning, team"."""
    folded = piece.casefold().strip(" .,!?;:…-—'\"")
    if folded.startswith(_CJK_GREETINGS) and len(folded) <= 6:
        return True
    words = _WORD.findall(folded)
    if not words or words[0] not in _GREETINGS and words[0] != "good":
        return False
    return len(words) <= 3


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
    return [fact for fact in facts if not redaction_only(fact.text)]


def _category(categories: Iterable[str]) -> str:
    return next((c for c in _CATEGORY_ORDER if c in categories), "correction")


def _clauses(
    sentence: str, categories: frozenset[str], rescan: Rescan
) -> list[tuple[str, frozenset[str]]] | None:
    """The clauses of ``sentence`` to keep as facts, with the categories each
    holds alone (see the module), when that is not the sentence itself and
    together they hold exactly the categories of the sentence; else None."""
    groups: list[list[Any]] = []  # [start, end, categories] of each fact's clauses
    pending: int | None = None  # the start of clauses that come before any durable one
    dropped = False
    for start, end in _pieces(sentence):
        found = frozenset(entry.category for entry in rescan(sentence[start:end]))
        if found & set(DURABLE):
            groups.append([start if pending is None else pending, end, found])
            pending = None
        elif not found and _filler(sentence[start:end]):
            dropped = True
        elif groups:
            groups[-1][1], groups[-1][2] = end, groups[-1][2] | found
        elif pending is None:
            pending = start
    if not groups or pending is not None or (len(groups) < 2 and not dropped):
        return None
    if frozenset().union(*(group[2] for group in groups)) != categories:
        return None
    return [(sentence[start:end], found) for start, end, found in groups]


def _pieces(sentence: str) -> list[tuple[int, int]]:
    """The spans of the clauses of ``sentence`` (``_CLAUSE_BREAK``), stripped."""
    spans, start = [], 0
    for match in [*_CLAUSE_BREAK.finditer(sentence), None]:
        stop = len(sentence) if match is None else match.start()
        piece = sentence[start:stop]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
        if match is not None:
            start = match.end()
    if spans:  # a greeting before a comma ("Привет, меня зовут ..."): a clause of its own
        first = _LEADING.match(sentence, spans[0][0], spans[0][1])
        if first is not None and _filler(first.group(1)):
            spans[0:1] = [(first.start(1), first.end(1)), (first.end(), spans[0][1])]
    return spans


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
