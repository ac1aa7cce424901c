"""Finding the heads of some searches (``heads.HeadSearch``) in one text.

A ``Finder`` holds, for the searches of some slots (a scan's languages and
categories), one trie regex per pass (heads that start a word, found from the
non-word character before them in ``" " + lowered``; the others) and what each
head found stands for. ``find`` runs the passes over a text and hands back a
``Starts``: per slot, where its heads start and which of their alternatives
can match there, the alternatives whose ``wants`` the text lacks dropped. A
slot's alternatives without heads (``rest``) are kept only if their wants
hold. The slots of vetoes are ``lazy``: their heads are matched to them only
when a rule matched a sentence, without reading wants.

``is_spaced`` tells a text in which every white space is a lone space, for
which the searches' ``spaced`` heads hold (longer, so rarer).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .heads import DIGITS, EXTRA_CASES, Head, HeadSearch

__all__ = ["Finder", "Starts", "find", "finder", "is_spaced"]

# per (slot, mask): the alternatives that need no literal, and (literal or literals,
# alternatives) pairs
_Plan = tuple[int, tuple[tuple[str, int], ...], tuple[tuple[tuple[str, ...], int], ...]]
_OTHER_DIGIT = re.compile(r"[^\D0-9０-９]")


@dataclass(frozen=True, slots=True)
class Finder:
    """Finds the heads of some searches, each known by a slot number, in a text:
    per pass, the regex and whether it runs on ``" " + lowered``; per head (of the
    second pass: after ``_ANYWHERE``), what it stands for: in ``keys``, per slot
    worked out at once, (slot, the plan of its alternatives' wants); for the
    ``lazy`` slots, in ``lazy``, per slot, head -> its alternatives there (no
    wants read: ``Starts.get`` places them only when asked)."""

    passes: tuple[tuple[re.Pattern[str], bool], ...]
    keys: Mapping[str, tuple[tuple[int, _Plan], ...]]
    guard: re.Pattern[str] | None  # text on which lowering does not mirror IGNORECASE
    digits: bool  # some head holds a digit that ``\\d`` stood for
    searches: Mapping[int, HeadSearch]  # by slot
    always: frozenset[int]  # slots whose search runs whatever heads are found (``plain``)
    rests: tuple[tuple[int, _Plan], ...]  # (slot, the plan of its ``rest_mask``), not lazy
    lazy: Mapping[int, Mapping[str, int]]  # per lazy slot, head -> its alternatives there


def finder(searches: Mapping[int, HeadSearch], lazy: Collection[int] = ()) -> Finder:
    """A finder for these searches, by slot; the heads of the ``lazy`` slots are
    only matched to them when ``Starts.get`` asks for one."""
    word: dict[str, dict[int, int]] = {}  # head -> slot -> mask of alternatives
    anywhere: dict[str, dict[int, int]] = {}
    literals: set[str] = set()
    for slot, found in searches.items():
        for heads, into in ((found.word_heads, word), (found.any_heads, anywhere)):
            for head, mask in heads.items():
                masks = into.setdefault(head, {})
                masks[slot] = masks.get(slot, 0) | mask
        literals.update(*(want for want in found.wants if want), found.needs or ())
    passes, keys, later = [], {}, dict[int, dict[str, int]]()
    plans: dict[Head, tuple[int, _Plan]] = {}  # one per (slot, alternatives)
    for by_head, padded in ((word, True), (anywhere, False)):
        if by_head:
            passes.append((re.compile(_trie(by_head, padded)), padded))
            for head in by_head:
                slots = _slots(by_head, head)
                name = head if padded else _ANYWHERE + head  # a head may be in both passes
                for key in slots:
                    if key not in plans and key[0] not in lazy:
                        plans[key] = (key[0], _plan(searches[key[0]], key[1]))
                keys[name] = tuple(plans[key] for key in slots if key[0] not in lazy)
                for slot, mask in slots:
                    if slot in lazy:
                        later.setdefault(slot, {})[name] = mask
    chars = set("".join(word) + "".join(anywhere) + "".join(literals))
    always = frozenset(slot for slot, found in searches.items() if found.plain)
    rests = tuple(
        (slot, _plan(found, found.rest_mask))
        for slot, found in searches.items()
        if found.rest is not None and slot not in lazy
    )
    return Finder(
        tuple(passes),
        keys,
        _guard(chars),
        bool(chars & set(DIGITS)),
        searches,
        always,
        rests,
        later,
    )


def _trie(heads: Mapping[str, Any], padded: bool) -> str:
    """A regex matching one character where a head starts, its last group the
    longest head there (``padded``: the non-word character before a head that
    starts a word, group 1 the whole head; else the head's first character, the
    group the rest of it)."""
    root: dict[str, Any] = {}
    for head in heads:
        node = root
        for char in head:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        after: dict[str, list[str]] = {}  # characters followed by the same rest
        for char, child in node.items():
            if char:
                after.setdefault(emit(child), []).append(re.escape(char))
        kids = [(f"[{''.join(c)}]" if len(c) > 1 else c[0]) + rest for rest, c in after.items()]
        if not kids:
            return ""
        body = kids[0] if len(kids) == 1 else "(?:" + "|".join(kids) + ")"
        return f"(?:{body})?" if "" in node else body

    if padded:
        return r"[^\w](?=(" + emit(root) + "))"
    return "|".join(f"{re.escape(char)}(?=({emit(child)}))" for char, child in root.items())


def _slots(heads: Mapping[str, dict[int, int]], head: str) -> tuple[Head, ...]:
    """Per slot, the alternatives that ``head`` or a head it starts with starts."""
    masks: dict[int, int] = {}
    for end in range(1, len(head) + 1):
        for slot, mask in heads.get(head[:end], {}).items():
            masks[slot] = masks.get(slot, 0) | mask
    return tuple(sorted(masks.items()))


def _guard(chars: set[str]) -> re.Pattern[str] | None:
    """The characters that IGNORECASE matches to one of ``chars`` but whose
    ``lower()`` differs from it (and capital sigma, lowered by its place)."""
    odd: set[str] = set()
    for char in chars:
        for code in EXTRA_CASES.get(ord(char), ()) if EXTRA_CASES else ():
            variant = chr(code)
            odd |= {v for v in (variant, variant.upper(), variant.title()) if v.lower() == variant}
        if char in "σς":
            odd.add("Σ")
    return re.compile("[" + "".join(map(re.escape, sorted(odd))) + "]") if odd else None


def is_spaced(text: str) -> bool:
    """Whether every white space in ``text`` is a lone ``" "`` (sure, not
    exact: a text with another non-printable character is not): where the
    heads of ``HeadSearch.spaced`` hold (``\\s+`` matches one space there).
    Every character ``\\s`` matches but the space is non-printable (tested)."""
    return text.isprintable() and "  " not in text


def find(found: Finder, text: str, lowered: str) -> Starts | None:
    """Where heads start in the text, by slot (``Starts``); None where the text
    defeats heads."""
    if not text.isascii() and (
        len(lowered) != len(text)
        or (found.guard is not None and found.guard.search(text))
        or (found.digits and _OTHER_DIGIT.search(text))
    ):
        return None
    heads: list[str] = []
    starts: list[int] = []
    for pattern, padded in found.passes:
        if padded:  # the character before text[pos] is at pos in " " + lowered
            matches = list(pattern.finditer(" " + lowered))
            heads += map(_GROUP, matches)
        else:
            matches = list(pattern.finditer(lowered))
            heads += [_ANYWHERE + m[0] + m[m.lastindex or 0] for m in matches]
        starts += map(_START, matches)
    return Starts(found, lowered, heads, starts)


_GROUP = operator.itemgetter(1)
_ANYWHERE = "\0"  # before the heads of the pass for those that need not start a word
_START = re.Match.start


class Starts:
    """Where the heads of a finder's searches start in one text.

    ``active``: per slot (but the finder's lazy ones) that has a head whose
    alternatives can match in the text, head -> those alternatives, and per
    slot whose alternatives without heads can (``rests``: slot -> those), {} at
    least; ``get``: a slot's heads in order, as (position, alternatives).
    """

    __slots__ = (
        "active",
        "rests",
        "_found",
        "_lowered",
        "_heads",
        "_starts",
        "_got",
    )

    def __init__(self, found: Finder, lowered: str, heads: list[str], starts: list[int]) -> None:
        self._found, self._lowered, self._heads, self._starts = found, lowered, heads, starts
        self._got: dict[int, list[Head]] = {}
        self.active = self._match(found.keys)
        self.rests: dict[int, int] = {}  # the few slots with alternatives without heads
        contains = lowered.__contains__
        for slot, (viable, one, more) in found.rests:  # as ``_match`` reads a plan
            for literal, bits in one:
                if literal in lowered:
                    viable |= bits
            for literals, bits in more:
                if any(map(contains, literals)):
                    viable |= bits
            if viable:
                self.rests[slot] = viable
                self.active.setdefault(slot, {})

    def _match(
        self, keys: Mapping[str, tuple[tuple[int, _Plan], ...]]
    ) -> dict[int, dict[str, int]]:
        """Per slot, head -> its alternatives in the slot that can match in the
        text, as their wants tell (each key's plan, ``_plan``, read inline)."""
        out: dict[int, dict[str, int]] = {}
        lowered = self._lowered
        contains = lowered.__contains__
        for head in dict.fromkeys(self._heads):
            for slot, (mask, one, more) in keys[head]:  # one per slot
                for literal, bits in one:
                    if literal in lowered:
                        mask |= bits
                for literals, bits in more:
                    if any(map(contains, literals)):
                        mask |= bits
                if mask:
                    if slot in out:
                        out[slot][head] = mask
                    else:
                        out[slot] = {head: mask}
        return out

    def get(self, slot: int) -> list[Head]:
        """Where the slot's heads start, in order, each with its alternatives that
        can match in the text."""
        got = self._got.get(slot)
        if got is None:
            by_head: Mapping[str, int] | None = self.active.get(slot)
            if by_head is None:  # a lazy slot (vetoes): every head of it, no wants read
                by_head = self._found.lazy.get(slot)
            got = self._got[slot] = _positions(by_head, self._heads, self._starts)
        return got


def _positions(
    by_head: Mapping[str, int] | None, heads: list[str], starts: list[int]
) -> list[Head]:
    """(position, alternatives) where each head of ``by_head`` starts, in order."""
    if not by_head:
        return []
    if len(by_head) == 1:  # one head's positions come from one pass: in order
        ((only, mask),) = by_head.items()
        return [(pos, mask) for pos, head in zip(starts, heads, strict=True) if head == only]
    get = by_head.get
    pairs = zip(starts, heads, strict=True)
    return sorted((pos, bits) for pos, head in pairs if (bits := get(head, 0)))


def _plan(found: HeadSearch, mask: int) -> _Plan:
    """The alternatives in ``mask`` that need no literal, and the others grouped
    by their wants: (literals, alternatives), each group can match only where
    one of its literals occurs (first the groups of one literal, as a string)."""
    free, groups = 0, dict[frozenset[str], int]()
    for n, wants in enumerate(found.wants):
        if not mask >> n & 1:
            continue
        if wants is None:
            free |= 1 << n
        else:
            groups[wants] = groups.get(wants, 0) | 1 << n
    one = [(next(iter(wants)), bits) for wants, bits in groups.items() if len(wants) == 1]
    more = [(tuple(sorted(wants)), bits) for wants, bits in groups.items() if len(wants) > 1]
    return free, tuple(one), tuple(more)
