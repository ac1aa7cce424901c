"""Heads: where the matches of a combined case-insensitive pattern can start.

A category's rules are one alternation searched over the whole message, which
costs at every position. But most alternatives start with literal text: the
*heads* of an alternative are lower-cased literals one of which begins every
match it can have (``\\bmy (?:wife|son)`` has ``my wife`` and ``my son``). They
are read off the tree ``re`` parses the alternative into: literals, small
classes (``{A}``; ``\\d`` stands for the ASCII and full-width digits), groups,
branches and the first turn of a repeat extend them; anything else (``\\w``,
``[A-Z]``, ``.``) ends them, and an alternative that can start with it has no
heads. One trie regex per pass finds every head in the lower-cased message: one
pass for heads that start a word (after ``\\b``), run on ``" " + lowered`` from
the non-word character before them, one for the others. The pattern is then
tried only where a head starts, and with only the alternatives that head starts
(``HeadSearch.subset``, compiled on its ``NARROW_AFTER``-th use in a process,
``HeadSearch.narrow``): the same matches, in the same order, as a full search.

An alternative's ``wants`` are literals one of which every match holds (its
longest literal run, or a branch of them); one the text lacks cannot match
anywhere, and its heads are dropped. Alternatives without heads (``rest``) are
searched in full, when the text holds one of their ``wants``.

Comparing ``lower()`` spellings is what ``re.IGNORECASE`` does, but for a few
characters: one that lowers to two (``İ``), final sigma, non-ASCII digits for
``\\d``, and the variants ``re`` matches to a literal besides its lower-case
(``ſ`` for ``s``, ``ı`` for ``i``). On a text holding one that matters, heads
are not used (``headfind.find`` returns None) and the caller searches in full.
So is an alternative whose tree this reading does not know, that can match the
empty string, that refers to a group, or that sets global flags
(``HeadSearch.plain``).

Each search is read twice: for any text, and (``HeadSearch.spaced``) for a
single-spaced one (``headfind.is_spaced``), where ``\\s`` and ``\\s+`` match
one space, so heads run on through them (``i decided`` rather than ``i``).
Finding the heads in a text is ``headfind``'s.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DIGITS", "EXTRA_CASES", "Head", "HeadSearch", "analyse", "combine", "proven"]

DIGITS = tuple("0123456789０１２３４５６７８９")
Head = tuple[int, int]  # where a head starts, and the mask of the alternatives it starts
_HEAD_LEN = 16  # a head is cut short past this many characters
_HEAD_COUNT = 64  # or when an alternative would have more heads than this
_SMALL_CLASS = 8  # a class of at most this many literals is spelled out
NARROW_AFTER = 4  # HeadSearch.narrow compiles a subset when asked for it this many times
_ZERO_WIDTH = {"AT", "ASSERT", "ASSERT_NOT"}
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_WORD = re.compile(r"\w")


def _internal(name: str, attribute: str) -> Any:
    """A part of ``re``'s implementation, or None where this Python has none."""
    try:
        return getattr(importlib.import_module(name), attribute, None)
    except ImportError:
        return None


_PARSE = _internal("re._parser", "parse")  # the tree ``re.compile`` builds
EXTRA_CASES = _internal("re._casefix", "_EXTRA_CASES")  # IGNORECASE beyond lower()


def _has_top_level_bar(source: str) -> bool:
    depth, in_class, escaped = 0, False, False
    for char in source:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth <= 0:
            return True
    return False


def combine(alternatives: Sequence[str]) -> re.Pattern[str]:
    """One case-insensitive alternation; a leading ``\\b`` is hoisted out of the
    alternatives that share it, so most positions fail on one boundary test."""
    bounded, other = [], []
    for alt in alternatives:
        head, _, rest = alt.partition(">") if alt.startswith("(?P<") else ("", "", alt)
        if rest.startswith(r"\b") and not _has_top_level_bar(rest):
            bounded.append(f"{head}>{rest[2:]}" if head else rest[2:])
        else:
            other.append(alt)
    parts = ([r"\b(?:" + "|".join(bounded) + ")"] if bounded else []) + other
    return re.compile("|".join(parts), re.I)


@dataclass(frozen=True, slots=True)
class HeadSearch:
    """A combined pattern and where its matches can start.

    ``word_heads`` / ``any_heads``: head -> mask of the alternatives it starts, at a
    word start / anywhere; ``wants``: per alternative, literals one of which every
    match holds (None: unknown); ``rest``: the alternatives without heads (the
    mask ``rest_mask``), and ``needs`` the union of their wants; ``plain``: heads
    are not to be used.
    """

    pattern: re.Pattern[str]
    alternatives: tuple[str, ...] = ()
    word_heads: Mapping[str, int] = field(default_factory=dict)
    any_heads: Mapping[str, int] = field(default_factory=dict)
    wants: tuple[frozenset[str] | None, ...] = ()
    rest: re.Pattern[str] | None = None
    needs: frozenset[str] | None = None
    plain: bool = False
    subsets: dict[int, re.Pattern[str]] = field(default_factory=dict, repr=False, compare=False)
    met: dict[int, int] = field(default_factory=dict, repr=False, compare=False)
    spaced: HeadSearch | None = None  # the heads read for single-spaced texts (``is_spaced``)
    rest_mask: int = 0

    def subset(self, mask: int) -> re.Pattern[str]:
        """The alternatives in ``mask``, combined as ``pattern``: where the others
        cannot match, it matches as ``pattern`` does."""
        pattern = self.subsets.get(mask)
        if pattern is None:
            chosen = [alt for n, alt in enumerate(self.alternatives) if mask >> n & 1]
            pattern = self.subsets[mask] = combine(chosen)
        return pattern

    def narrow(self, mask: int, whole: re.Pattern[str] | None = None) -> re.Pattern[str]:
        """``subset(mask)`` where only the alternatives in ``mask`` can match, or
        until it has been asked for ``NARROW_AFTER`` times (in this process)
        ``whole`` (by default ``pattern``): a pattern holding them and others
        that cannot match there finds the same (a short-lived process does not
        compile a subset for one message)."""
        pattern = self.subsets.get(mask)
        if pattern is None:
            met = self.met.get(mask, 0) + 1
            if met < NARROW_AFTER:
                self.met[mask] = met
                return self.pattern if whole is None else whole
            pattern = self.subset(mask)
        return pattern


def analyse(alternatives: Sequence[str]) -> HeadSearch:
    """The alternatives combined, with the heads and wants of each, for any
    text, and (``spaced``) for single-spaced texts."""
    found = _analyse(combine(alternatives), alternatives, False, {})
    spaced = _analyse(found.pattern, alternatives, True, found.subsets, found.met)
    return HeadSearch(**{**_fields(found), "spaced": spaced})


def _fields(found: HeadSearch) -> dict[str, Any]:
    return {name: getattr(found, name) for name in HeadSearch.__dataclass_fields__}


def _analyse(
    pattern: re.Pattern[str],
    alternatives: Sequence[str],
    spaced: bool,
    subsets: dict[int, re.Pattern[str]],
    met: dict[int, int] | None = None,
) -> HeadSearch:
    met = {} if met is None else met
    word: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    wants: list[frozenset[str] | None] = []
    rest: list[str] = []
    rest_mask = 0
    needs: set[str] | None = set()
    for n, alternative in enumerate(alternatives):
        try:
            read = _read(alternative, spaced)
        except Exception:  # a tree this reading does not know: search in full
            read = None
        if read is None:
            return HeadSearch(pattern, plain=True, subsets=subsets, met=met)
        heads, word_led, want = read
        wants.append(want)
        if "" in heads:
            rest.append(alternative)
            rest_mask |= 1 << n
            needs = None if want is None or needs is None else needs | want
            continue
        for head in heads:
            into = word if word_led and _WORD.match(head) else anywhere
            into[head] = into.get(head, 0) | 1 << n
    others = combine(rest) if rest else None
    return HeadSearch(
        pattern,
        tuple(alternatives),
        word,
        anywhere,
        tuple(wants),
        others,
        _frozen(needs),
        subsets=subsets,
        met=met,
        rest_mask=rest_mask,
    )


def _frozen(literals: set[str] | None) -> frozenset[str] | None:
    return None if literals is None else frozenset(literals)


def _read(alternative: str, spaced: bool) -> tuple[set[str], bool, frozenset[str] | None] | None:
    """An alternative's heads ("" among them: it has none), whether it starts at
    ``\\b``, and its wants; None if heads are not to be used for it. ``spaced``:
    heads for single-spaced texts, where ``\\s`` and ``\\s+`` match one space."""
    if _PARSE is None or EXTRA_CASES is None:
        return None
    tree = _PARSE(alternative, re.I)
    if tree.state.flags != _PARSE("", re.I).state.flags or tree.getwidth()[0] == 0:
        return None
    if _refers(tree.data):
        return None
    grown, cut = _heads(tree.data, {""}, spaced)
    heads = grown | cut
    return heads, _word_led(tree.data), _wants(tree.data, heads)


def _refers(node: Any) -> bool:
    """Whether a parsed tree refers to a group (its number changes in a subset)."""
    if hasattr(node, "data"):
        node = node.data
    if isinstance(node, list | tuple):
        if len(node) == 2 and str(node[0]).startswith("GROUPREF"):
            return True
        return any(_refers(item) for item in node)
    return False


def _chars(name: str, arg: Any, spaced: bool = False) -> set[str] | None:
    """The lower-cased characters one parsed item matches, if it is a literal or
    a small class of them; ``\\d`` stands for the ASCII and full-width digits,
    and (``spaced``) ``\\s`` for the space."""
    if name == "LITERAL":
        codes = [arg]
    elif name != "IN":
        return None
    elif [(str(op), str(value)) for op, value in arg] == [("CATEGORY", "CATEGORY_DIGIT")]:
        return set(DIGITS)
    elif [(str(op), str(value)) for op, value in arg] == [("CATEGORY", "CATEGORY_SPACE")]:
        return {" "} if spaced else None
    elif len(arg) <= _SMALL_CLASS and all(str(op) == "LITERAL" for op, _ in arg):
        codes = [value for _, value in arg]
    else:
        return None
    chars = {chr(code).lower() for code in codes}
    return chars if all(len(char) == 1 for char in chars) else None


def _heads(items: Any, heads: set[str], spaced: bool) -> tuple[set[str], set[str]]:
    """Walk a parsed sequence from ``heads``, the literal starts so far: the starts
    still growing after it, and those cut short inside it."""
    cut: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name in _ZERO_WIDTH:
            continue
        chars = _chars(name, arg, spaced)
        if chars is not None:
            grown = {head + char for head in heads for char in chars}
        elif name in ("SUBPATTERN", "ATOMIC_GROUP", "BRANCH"):
            branches = arg[1] if name == "BRANCH" else [arg[-1] if name == "SUBPATTERN" else arg]
            grown = set()
            for branch in branches:
                more, inner = _heads(branch, heads, spaced)
                grown, cut = grown | more, cut | inner
        elif name in _REPEATS:
            grown, cut = _repeat(arg, heads, cut, spaced)
        else:
            return set(), cut | heads
        if len(grown) > _HEAD_COUNT or any(len(head) > _HEAD_LEN for head in grown):
            return set(), cut | _shorten(grown, heads)
        if not grown:
            return grown, cut
        heads = grown
    return heads, cut


def _repeat(arg: Any, heads: set[str], cut: set[str], spaced: bool) -> tuple[set[str], set[str]]:
    """``_heads`` over ``x{low,high}``: one turn of ``x`` is walked, a second is
    not; but in a single-spaced text ``\\s+`` (or ``\\s*``) is one space (or none)."""
    low, high, body = arg
    once, inner = _heads(body, heads, spaced)
    cut = cut | inner
    single = spaced and low <= 1 and len(body) == 1 and _chars(str(body[0][0]), body[0][1], True)
    single = single == {" "}
    if high != 1 and not single:
        return (heads if low == 0 else set()), cut | once
    return (heads | once if low == 0 else once), cut


def _shorten(heads: set[str], fallback: set[str]) -> set[str]:
    """``heads`` cut to the longest length that leaves few enough of them."""
    for size in range(_HEAD_LEN, 0, -1):
        short = {head[:size] for head in heads}
        if len(short) <= _HEAD_COUNT:
            return short
    return fallback


def _word_led(items: Any) -> bool:
    """Whether a parsed sequence starts with ``\\b``."""
    for op, arg in items:
        if str(op) == "SUBPATTERN":
            return _word_led(arg[-1])
        return str(op) == "AT" and str(arg) == "AT_BOUNDARY"
    return False


def _needs(items: Any) -> list[set[str]]:
    """Sets of lower-cased literals of each of which every match of a parsed
    sequence holds one: its literal runs, and what its groups and branches need."""
    found: list[set[str]] = []
    run = ""
    for op, arg in [*items, (None, None)]:
        name = str(op)
        chars = _chars(name, arg) if name == "LITERAL" else None
        if chars is not None:
            run += chars.pop()
            continue
        if run:
            found.append({run})
        run = ""
        if name in ("SUBPATTERN", "ATOMIC_GROUP"):
            found += _needs(arg[-1] if name == "SUBPATTERN" else arg)
        elif name == "BRANCH":
            options = [min(_needs(branch), key=_cost, default=None) for branch in arg[1]]
            if all(options):
                found.append({lit for option in options for lit in option or ()})
        elif name in _REPEATS and arg[0] >= 1:
            found += _needs(arg[2])
    return found


def _cost(literals: set[str]) -> tuple[int, int, int]:
    """Which set of literals to test a text for: long ones (rare), then few."""
    shortest = min(map(len, literals))
    return -min(shortest, 4), len(literals), -shortest


def _wants(items: Any, heads: set[str]) -> frozenset[str] | None:
    """The cheapest set of literals every match holds one of, which its heads do
    not already hold."""
    options = [
        needs
        for needs in _needs(items)
        if "" in heads or not all(any(n in head for n in needs) for head in heads)
    ]
    if not options:
        return None
    best: set[str] = min(options, key=_cost)
    return frozenset(best)


def proven(found: HeadSearch, triggers: Sequence[str]) -> int:
    """The alternatives every match of which holds one of ``triggers``: each of
    their heads, or each of their wants, holds one. Where one of them matches,
    the text holds a trigger: no need to look."""

    def hold(literals: Sequence[str]) -> bool:
        return bool(literals) and all(any(t in lit for t in triggers) for lit in literals)

    mask = 0
    for n, wants in enumerate(found.wants):
        bit = 1 << n
        heads = [h for by in (found.word_heads, found.any_heads) for h, m in by.items() if m & bit]
        if hold(heads) or hold(sorted(wants or ())):
            mask |= bit
    return mask
