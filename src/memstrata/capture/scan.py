"""Rule-based capture scanner: what a user message states, found before the agent answers.

``scan(text)`` returns the entries a message holds, in six categories
(``correction``, ``proper_noun``, ``preference``, ``decision``,
``specific_value``, ``remember``). The rules are data: one TOML pack per
language in ``capture/rules`` (``en``, ``uz``, ``ru``, ``zh``), extendable by
``*.toml`` packs from a workspace folder (``load_rules(extra_dir)``).

Guarantees:

* each category appears at most once per message; entries are ordered by
  position, and ``entry.text == text[entry.span[0]:entry.span[1]]`` is the
  sentence that matched;
* a sentence that a pack's vetoes match (a question, a hypothetical,
  reported speech, code) yields nothing, whatever else it contains; other
  sentences of the same message still count;
* a rule match that starts inside a quotation (``'...'``, ``"..."``,
  ``“...”``, ``«...»``, ``「...」``) is ignored, and so is one whose sentence a
  rule's own ``unless`` patterns match;
* a spoiled match hides nothing: a category's entry is the sentence of the
  first position where one of its rules matches and neither the vetoes, a
  quotation nor that rule's ``unless`` spoil it. Every rule is tried at a
  position where another's match was spoiled by its ``unless``, and positions
  inside a match spoiled by a quotation or an ``unless`` are tried too; a
  match in a vetoed sentence is skipped up to its end or the sentence's,
  whichever comes first (the same with triggers and heads as without);
* with ``languages=None`` the packs are picked by script: Cyrillic runs ``ru``,
  CJK runs ``zh``, any other text runs ``en`` and ``uz``;
* the learned scorer (``scorer.py``; ``learned=False`` turns it off) then
  adds the durable categories the rules missed, each on one sentence of the
  message that no pack's vetoes match; it never removes a rule's entry, and
  with explicit ``languages`` it runs only on text of their script;
* every pattern is compiled once: one alternation per category per language,
  one veto pattern per language, and (on first need in a process: where a
  match was spoiled by its rule's ``unless``) each rule's own alternatives. A
  bad pack raises ``InvalidInput`` naming the file and the rule; the scanner
  itself never raises on any text;
* nothing is compiled at import: the built-in packs at the first ``scan``
  (``default_rules``), and a compiled rule set is cached on disk between
  processes (``rulecache``), so a short-lived process pays a file read.

Pack schema (``rules/*.toml``)::

    language = "en"
    vetoes = ['\\?', '\\bsuppose\\b']           # sentence-level, all categories
    [[rule]]
    name = "my-name-is"                          # optional, for error messages
    category = "proper_noun"
    pattern = '\\bmy name is\\s+{UP}'            # a string or a list of strings
    unless = ["\\bnot\\b"]                        # optional vetoes on the sentence
    flags = ["case_sensitive"]                   # optional
    triggers = ["my name"]                       # optional, see below

Patterns are case-insensitive unless ``case_sensitive``; ``(?-i:...)`` makes a
part case-sensitive. Macros: ``{S}`` a sentence start, ``{A}`` an apostrophe
of any kind, ``{UP}`` an upper-case letter (Latin or Cyrillic).

``triggers`` (optional) are literal strings of which at least one occurs
(case-insensitively) in every text the rule can match; ``"{DIGIT}"`` stands
for any ASCII or full-width digit. When every rule of a category has
triggers, the category's pattern only runs on texts holding one of them.
A trigger list that is not a necessary condition makes the rule miss; the
test suite checks the built-in packs against ``use_triggers=False``.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from . import rulecache
from .headfind import Finder, Starts, find, finder, is_spaced
from .heads import DIGITS, Head, HeadSearch, analyse, combine, proven
from .matches import Stream, every_start, go_on
from .scorer import RULE_CATEGORIES, additions

__all__ = ["CATEGORIES", "Entry", "RuleSet", "default_rules", "load_rules", "scan"]

CATEGORIES = RULE_CATEGORIES  # a rule's category (the scorer reads verdicts in this order)
_MACROS = {
    "{S}": r"\b(?:(?<![\s\S])|(?<=[.!?;…\n]\s)|(?<=[。！？；\n]))",
    "{A}": r"['‘’ʻʼ`]",
    "{UP}": r"(?-i:[A-ZА-ЯЁ])",
}
_RULE_KEYS = {"name", "category", "pattern", "unless", "flags", "triggers"}
_FLAGS = {"case_sensitive"}
# Both start with one character class, so ``re`` skips to a candidate in C; they
# match as ``[.!?…]+(?=\s)|[。！？；\n]+|[.!?…]+$`` and as
# ``(?<!\w)'[^'\n]+'(?!\w)|"[^"\n]+"|“[^”\n]+”|«[^»\n]+»|「[^」\n]+」`` do (tested).
_SENTENCE_END = re.compile(
    r"[.!?…。！？；\n](?:(?<=[.!?…])[.!?…]*(?=\s|\Z)|(?<=[。！？；\n])[。！？；\n]*)"
)
_QUOTED = re.compile(
    r"['\"“«「](?:(?<=')(?<!\w')[^'\n]+'(?!\w)|(?<=\")[^\"\n]+\"|(?<=“)[^”\n]+”"
    r"|(?<=«)[^»\n]+»|(?<=「)[^」\n]+」)"
)
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class Entry:
    """One capture: its category and the sentence of the message that holds it."""

    category: str
    text: str
    span: tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Category:
    search: HeadSearch
    unless: Mapping[str, re.Pattern[str]]  # group name -> veto on the sentence
    triggers: tuple[str, ...]  # one must occur in the lower-cased text; () for any text
    proven: tuple[int, int] = (0, 0)  # the alternatives whose every match holds a trigger,
    # by the heads read for any text and for single-spaced ones (``HeadSearch.spaced``)
    rules: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per group of ``unless`` ("": the
    # rules without), its alternatives: what ``_another`` tries where a match was spoiled
    compiled: dict[str, re.Pattern[str]] = field(default_factory=dict, repr=False, compare=False)

    def own(self, group: str) -> re.Pattern[str]:
        """The alternatives of one group of ``rules`` combined, compiled on first use."""
        pattern = self.compiled.get(group)
        if pattern is None:
            pattern = self.compiled[group] = combine(dict(self.rules)[group])
        return pattern


@dataclass(frozen=True, slots=True)
class _Pack:
    veto: HeadSearch | None
    categories: Mapping[str, _Category]


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Compiled packs by language code."""

    packs: Mapping[str, _Pack]
    fast: bool = True  # False: every pattern searches the whole text (the reference)
    finders: dict[tuple[tuple[str, ...], bool], Finder] = field(
        default_factory=dict, repr=False, compare=False
    )


def _expand(source: str) -> str:
    for macro, value in _MACROS.items():
        source = source.replace(macro, value)
    return source


def _patterns(value: Any, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(p, str) for p in items):
        raise InvalidInput(f"{where}: expected a regex string or a non-empty list of them")
    out = []
    for item in items:
        source = _expand(item)
        if "(?P<" in source:
            raise InvalidInput(f"{where}: named groups are reserved, use (?:...)")
        try:
            re.compile(source)
        except re.error as exc:
            raise InvalidInput(f"{where}: bad regex {item!r}: {exc}") from None
        out.append(source)
    return out


def _read_pack(name: str, raw: str, into: dict[str, dict[str, Any]]) -> None:
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"capture rules {name}: not valid TOML: {exc}") from None
    language = data.get("language")
    if not isinstance(language, str) or not language:
        raise InvalidInput(f"capture rules {name}: missing 'language'")
    unknown = set(data) - {"language", "vetoes", "rule"}
    if unknown:
        raise InvalidInput(f"capture rules {name}: unknown keys {sorted(unknown)}")
    pack = into.setdefault(language, {"vetoes": [], "rules": []})
    if "vetoes" in data:
        pack["vetoes"] += _patterns(data["vetoes"], f"capture rules {name}: vetoes")
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise InvalidInput(f"capture rules {name}: 'rule' must be an array of tables")
    for index, rule in enumerate(rules, 1):
        label = rule.get("name", f"#{index}") if isinstance(rule, dict) else f"#{index}"
        where = f"capture rules {name}: rule {label}"
        if not isinstance(rule, dict) or set(rule) - _RULE_KEYS:
            raise InvalidInput(f"{where}: allowed keys are {sorted(_RULE_KEYS)}")
        if rule.get("category") not in CATEGORIES:
            raise InvalidInput(f"{where}: category must be one of {', '.join(CATEGORIES)}")
        flags = rule.get("flags", [])
        if not isinstance(flags, list) or set(flags) - _FLAGS:
            raise InvalidInput(f"{where}: flags must be a list from {sorted(_FLAGS)}")
        if "pattern" not in rule:
            raise InvalidInput(f"{where}: missing 'pattern'")
        body = _patterns(rule["pattern"], where)
        if "case_sensitive" in flags:
            body = [f"(?-i:{alt})" for alt in body]
        unless = _patterns(rule["unless"], where) if "unless" in rule else []
        pack["rules"].append((rule["category"], body, unless, _triggers(rule, where)))


def _triggers(rule: dict[str, Any], where: str) -> tuple[str, ...] | None:
    if "triggers" not in rule:
        return None
    raw = rule["triggers"]
    if not isinstance(raw, list) or not raw or not all(isinstance(t, str) and t for t in raw):
        raise InvalidInput(f"{where}: triggers must be a non-empty list of non-empty strings")
    out: list[str] = []
    for trigger in raw:
        out += DIGITS if trigger == "{DIGIT}" else [trigger.lower()]
    return tuple(out)


def _compile(raw_packs: dict[str, dict[str, Any]], use_triggers: bool) -> RuleSet:
    packs: dict[str, _Pack] = {}
    for language, raw in raw_packs.items():
        veto = analyse(raw["vetoes"]) if raw["vetoes"] else None
        categories: dict[str, _Category] = {}
        for category in CATEGORIES:
            alternatives, unless = [], {}
            own: dict[str, list[str]] = {}  # per group (of unless, "" for none): alternatives
            gate: list[str] | None = [] if use_triggers else None
            for index, (cat, body, vetoes, triggers) in enumerate(raw["rules"]):
                if cat != category:
                    continue
                gate = None if gate is None or triggers is None else gate + list(triggers)
                group = f"r{index}"
                if vetoes:  # only a rule with vetoes needs to be told apart
                    alternatives += [f"(?P<{group}_{n}>{alt})" for n, alt in enumerate(body)]
                    unless[group] = re.compile("|".join(vetoes), re.I)
                    own[group] = body
                else:
                    alternatives += body
                    own.setdefault("", []).extend(body)
            if alternatives:
                triggers = tuple(dict.fromkeys(gate or ()))
                found = analyse(alternatives)
                both = (proven(found, triggers), proven(_read_for(found, True), triggers))
                rules = tuple((group, tuple(body)) for group, body in own.items())
                categories[category] = _Category(found, unless, triggers, both, rules)
        packs[language] = _Pack(veto, categories)
    return RuleSet(packs, fast=use_triggers)


def load_rules(
    extra_dir: Path | None = None,
    *,
    use_triggers: bool = True,
    extra_packs: Sequence[tuple[str, str]] = (),
) -> RuleSet:
    """Compile the built-in packs plus every ``*.toml`` pack in ``extra_dir``
    and the ``(name, toml text)`` of ``extra_packs``.

    ``use_triggers=False`` ignores the rules' triggers (every category's pattern
    runs on every message): the same results, slower; for checking triggers.
    The result comes from the on-disk rule cache when it holds these packs
    (``rulecache``: keyed by the packs' text, the scanner's code and Python).
    """
    texts: list[tuple[str, str]] = []
    folder = resources.files(__package__).joinpath("rules")
    for language in ("en", "uz", "ru", "zh"):
        resource = folder.joinpath(f"{language}.toml")
        texts.append((f"{language}.toml", resource.read_text(encoding="utf-8")))
    if extra_dir is not None:
        for path in sorted(Path(extra_dir).glob("*.toml")):
            try:
                texts.append((str(path), path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput(f"capture rules {path}: cannot read: {exc}") from None
    texts += extra_packs

    def build() -> RuleSet:
        raw_packs: dict[str, dict[str, Any]] = {}
        for name, raw in texts:
            _read_pack(name, raw, raw_packs)
        rules = _compile(raw_packs, use_triggers)
        for codes in _DETECTED:  # the finders every scan of a detected text needs
            if rules.fast and all(code in rules.packs for code in codes):
                _finder(rules, codes, False)
                _finder(rules, codes, True)
        return rules

    sources = [f"use_triggers={use_triggers}", *itertools.chain.from_iterable(texts)]
    return rulecache.cached(sources, build)


_DEFAULT: RuleSet | None = None  # the built-in packs, loaded at the first scan


def default_rules() -> RuleSet:
    """The built-in packs, compiled (or read from the rule cache) once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_rules()
    return _DEFAULT


_DETECTED = (("en", "uz"), ("ru",), ("zh",), ("ru", "zh"))  # what _detect can return
_SLOTS = len(CATEGORIES) + 1  # per language: one slot per category, then the vetoes
_VETO = len(CATEGORIES)
_OFFSET = {category: offset for offset, category in enumerate(CATEGORIES)}
_MARKS = ".!?…。！？；\n"  # the characters _SENTENCE_END is made of


def _finder(rules: RuleSet, codes: tuple[str, ...], spaced: bool) -> Finder:
    """The finder of the heads of these languages' packs, by slot (language
    index, then category or vetoes), read for any text or (``spaced``) for
    single-spaced ones; made once per rule set, languages and reading. The
    vetoes' heads are matched to them only for a sentence a rule matched."""
    found = rules.finders.get((codes, spaced))
    if found is None:
        searches: dict[int, HeadSearch] = {}
        for index, code in enumerate(codes):
            pack = rules.packs[code]
            for category, compiled in pack.categories.items():
                searches[index * _SLOTS + _OFFSET[category]] = _read_for(compiled.search, spaced)
            if pack.veto is not None:
                searches[index * _SLOTS + _VETO] = _read_for(pack.veto, spaced)
        vetoes = {slot for slot in searches if slot % _SLOTS == _VETO}
        found = rules.finders[codes, spaced] = finder(searches, vetoes)
    return found


def _read_for(search: HeadSearch, spaced: bool) -> HeadSearch:
    """The search with its heads read for any text, or for single-spaced ones."""
    return search.spaced if spaced and search.spaced is not None else search


# -- scanning ----------------------------------------------------------------------


def _detect(text: str) -> tuple[str, ...]:
    if text.isascii():
        return ("en", "uz")
    found = []
    if _CYRILLIC.search(text):
        found.append("ru")
    if _CJK.search(text):
        found.append("zh")
    return tuple(found) or ("en", "uz")


class _Message:
    """A text being scanned, and what is worked out about it at most once."""

    __slots__ = ("text", "lowered", "spaced", "starts", "_ends", "_quotes")

    def __init__(self, text: str, lowered: str, spaced: bool, seeker: Finder | None) -> None:
        self.text, self.lowered, self.spaced = text, lowered, spaced
        self.starts: Starts | None = find(seeker, text, lowered) if seeker else None
        self._ends: list[int] | None = None
        self._quotes: list[tuple[int, int]] | None = None

    def sentence(self, pos: int) -> tuple[int, int]:
        """The sentence around ``pos``: it starts after the last sentence end in
        ``text[:pos]`` (one that ``pos`` cuts counts), ends with the next one."""
        if self._ends is None:
            self._ends = [mark.end() for mark in _SENTENCE_END.finditer(self.text)]
        ends, text = self._ends, self.text
        after = bisect_right(ends, pos)
        end = ends[after] if after < len(ends) else len(text)
        start = pos if pos and text[pos - 1] in _MARKS else ends[after - 1] if after else 0
        while start < end and text[start].isspace():
            start += 1
        return start, end

    def quoted(self, pos: int) -> bool:
        if self._quotes is None:
            self._quotes = [quote.span() for quote in _QUOTED.finditer(self.text)]
        return any(start < pos < end for start, end in self._quotes)

    def holds(self, literals: Collection[str] | None, span: tuple[int, int] | None = None) -> bool:
        """Whether the lower-cased text (``span`` of it) holds one of ``literals``
        (any text does, for None)."""
        if literals is None:
            return True
        lowered = self.lowered if span is None else self.lowered[span[0] : span[1]]
        return any(map(lowered.__contains__, literals))


def _matches(category: _Category, message: _Message, slot: int) -> Stream | None:
    """The pattern's match at each position where it matches (``every_start``)
    if the category's triggers occur; None where it is known to yield nothing."""
    found = _read_for(category.search, message.spaced)
    if message.starts is None or found.plain:
        if not message.holds(category.triggers or None):
            return None
        return every_start(found.pattern, message.text)
    heads = message.starts.get(slot)
    mask = message.starts.rests.get(slot)  # the alternatives without heads that can match
    rest = found.narrow(mask, found.rest) if mask else None  # rest: the same starts
    return _chain(category, rest, message, heads) if heads or rest else None


def _chain(
    category: _Category, rest: re.Pattern[str] | None, message: _Message, heads: list[Head]
) -> Stream:
    """``every_start(pattern, text)`` if the category's triggers occur, trying
    the alternatives only where one of their heads starts, or where ``rest``
    matches: no match can start elsewhere."""
    found, text = category.search, message.text
    never = len(text) + 1
    floor = index = 0  # every match that starts before floor is yielded already
    upcoming = -1 if rest is not None else never  # where rest matches next
    gated = not category.triggers  # the text is known to hold a trigger
    while True:
        while index < len(heads) and heads[index][0] < floor:
            index += 1
        if rest is not None and upcoming < floor:
            hit = rest.search(text, floor)
            upcoming = hit.start() if hit else never
        at = min(heads[index][0] if index < len(heads) else never, upcoming)
        if at >= never:
            return
        mask = -1 if at == upcoming else _mask(heads, index)
        match = (found.pattern if mask < 0 else found.narrow(mask)).match(text, at)
        if match is None:
            floor = at + 1
            continue
        if not gated:  # as without heads: no match at all if no trigger occurs
            proved = category.proven[message.spaced]
            gated = 0 <= mask == mask & proved or message.holds(category.triggers)
            if not gated:
                return
        floor = (yield match) or match.start() + 1  # as every_start


def _mask(heads: list[Head], index: int) -> int:
    """The alternatives whose heads start where ``heads[index]`` does."""
    at, mask = heads[index]
    index += 1
    while index < len(heads) and heads[index][0] == at:
        mask |= heads[index][1]
        index += 1
    return mask


def _vetoed(pack: _Pack, message: _Message, span: tuple[int, int], slot: int) -> bool:
    """Whether the pack's vetoes match the sentence ``span``."""
    if pack.veto is None:
        return False
    veto = _read_for(pack.veto, message.spaced)
    start, end = span
    sentence = message.text[start:end]
    if message.starts is None or veto.plain:
        return veto.pattern.search(sentence) is not None
    heads = message.starts.get(slot)
    for pos, mask in itertools.islice(heads, bisect_left(heads, (start,)), None):
        if pos >= end:
            break
        if veto.narrow(mask).match(sentence, pos - start):
            return True
    rest = veto.rest
    return rest is not None and message.holds(veto.needs, span) and bool(rest.search(sentence))


def _first(
    category: str,
    matches: Stream,
    pack: _Pack,
    message: _Message,
    slot: int,
    vetoed: dict[tuple[int, int], bool],
) -> Entry | None:
    """The category's entry: the sentence of its first match that no veto,
    ``unless`` or quote spoils. ``matches`` holds the first alternative's match
    at every position where one matches; where its rule's ``unless`` spoils it,
    the category's other rules are tried at that position (``_another``). A
    match in a vetoed sentence is skipped whole, as ``finditer`` would, but
    for its part past the sentence's end."""
    compiled = pack.categories[category]
    match = next(matches, None)
    while match is not None:
        at = match.start()
        span = message.sentence(at)
        if span not in vetoed:
            vetoed[span] = _vetoed(pack, message, span, slot)
        if vetoed[span]:  # every rule's match in the sentence is spoiled: go on after
            # this one, or at the sentence's end if the match runs past it
            match = go_on(matches, max(min(match.end(), span[1]), at + 1))
            continue
        if not message.quoted(at):
            sentence = message.text[span[0] : span[1]]
            group = (match.lastgroup or "").partition("_")[0]
            unless = compiled.unless.get(group)
            if (
                unless is None
                or not unless.search(sentence)
                or _another(compiled, message.text, at, sentence, group)
            ):
                return Entry(category, sentence, span)
        match = next(matches, None)
    return None


def _another(compiled: _Category, text: str, at: int, sentence: str, spoiled: str) -> bool:
    """Whether a rule of the category other than the ``spoiled`` group matches
    at ``at`` with no ``unless`` of its own matching the sentence."""
    for group, _ in compiled.rules:
        if group != spoiled and compiled.own(group).match(text, at) is not None:
            unless = compiled.unless.get(group)
            if unless is None or not unless.search(sentence):
                return True
    return False


def _learned(
    found: dict[str, Entry],
    message: _Message,
    ruleset: RuleSet,
    codes: Sequence[str],
    vetoes: dict[int, dict[tuple[int, int], bool]],
) -> None:
    """Add the durable categories the learned scorer finds beyond the rules
    (``scorer.py``), each on a sentence no pack's vetoes match (``_vetoed``,
    remembered per sentence as for the rules: the same answer as the packs'
    veto patterns searched over the sentence)."""
    text = message.text
    for category, span in additions(text, found, lowered=message.lowered):
        for index, code in enumerate(codes):
            vetoed = vetoes.setdefault(index, {})
            if span not in vetoed:
                vetoed[span] = _vetoed(ruleset.packs[code], message, span, index * _SLOTS + _VETO)
            if vetoed[span]:
                break
        else:
            found[category] = Entry(category, text[span[0] : span[1]], span)


def _slots(
    rules: RuleSet, codes: Sequence[str], seeker: Finder | None, starts: Starts | None
) -> list[int]:
    """The slots of the categories to search, in order: with heads, those whose
    alternatives can match (``Starts.active``) or that have none (``always``)."""
    if seeker is not None and starts is not None:
        return sorted(seeker.always.union(starts.active))
    return [
        index * _SLOTS + _OFFSET[category]
        for index, code in enumerate(codes)
        for category in rules.packs[code].categories
    ]


def scan(
    text: str,
    *,
    languages: Sequence[str] | None = None,
    rules: RuleSet | None = None,
    learned: bool = True,
) -> list[Entry]:
    """The entries ``text`` holds, at most one per category, in message order:
    the rules' and the learned scorer's (``learned=False``: the rules' alone).
    The scorer is on since it was measured on the held-out folders, written
    blind and never trained on: on ``unseen/`` recall 0.646 -> 0.787 at
    precision 0.958 -> 0.966, on ``unseen2/`` 0.539 -> 0.704 at 0.906 -> 0.906
    (docs/capture-history.md, round 3)."""
    ruleset = rules or default_rules()
    codes = tuple(languages) if languages is not None else _detect(text)
    for code in codes:
        if code not in ruleset.packs:
            raise InvalidInput(f"no capture rules for language {code!r}")
    spaced = is_spaced(text)
    seeker = _finder(ruleset, codes, spaced) if ruleset.fast else None
    message = _Message(text, text.lower(), spaced, seeker)
    found: dict[str, Entry] = {}
    vetoes: dict[int, dict[tuple[int, int], bool]] = {}  # per pack: sentence span -> vetoed
    for slot in _slots(ruleset, codes, seeker, message.starts):  # in order: packs, categories
        index, offset = divmod(slot, _SLOTS)
        category = CATEGORIES[offset]
        if category in found:
            continue
        pack, vetoed = ruleset.packs[codes[index]], vetoes.setdefault(index, {})
        matches = _matches(pack.categories[category], message, slot)
        entry = matches and _first(category, matches, pack, message, slot - offset + _VETO, vetoed)
        if entry:
            found[category] = entry
    if learned and (languages is None or set(codes) & set(_detect(text))):
        _learned(found, message, ruleset, codes, vetoes)
    return sorted(found.values(), key=lambda e: (e.span[0], _OFFSET[e.category]))
