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
* with ``languages=None`` the packs are picked by script: Cyrillic runs ``ru``,
  CJK runs ``zh``, any other text runs ``en`` and ``uz``;
* every pattern is compiled once: one alternation per category per language,
  one veto pattern per language. A bad pack raises ``InvalidInput`` naming
  the file and the rule; the scanner itself never raises on any text.

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

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InvalidInput

__all__ = ["CATEGORIES", "Entry", "RuleSet", "load_rules", "scan"]

CATEGORIES = (
    "correction",
    "proper_noun",
    "preference",
    "decision",
    "specific_value",
    "remember",
)
_MACROS = {
    "{S}": r"\b(?:(?<![\s\S])|(?<=[.!?;…\n]\s)|(?<=[。！？；\n]))",
    "{A}": r"['‘’ʻʼ`]",
    "{UP}": r"(?-i:[A-ZА-ЯЁ])",
}
_RULE_KEYS = {"name", "category", "pattern", "unless", "flags", "triggers"}
_DIGITS = tuple("0123456789０１２３４５６７８９")
_FLAGS = {"case_sensitive"}
_SENTENCE_END = re.compile(r"[.!?…]+(?=\s)|[。！？；\n]+|[.!?…]+$")
_QUOTED = re.compile(r"(?<!\w)'[^'\n]+'(?!\w)|\"[^\"\n]+\"|“[^”\n]+”|«[^»\n]+»|「[^」\n]+」")
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
    pattern: re.Pattern[str]
    unless: Mapping[str, re.Pattern[str]]  # group name -> veto on the sentence
    triggers: re.Pattern[str] | None  # literals, one must occur in the lower-cased text


@dataclass(frozen=True, slots=True)
class _Pack:
    veto: re.Pattern[str] | None
    categories: Mapping[str, _Category]


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Compiled packs by language code."""

    packs: Mapping[str, _Pack]


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
        out += _DIGITS if trigger == "{DIGIT}" else [trigger.lower()]
    return tuple(out)


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


def _combine(alternatives: list[str]) -> re.Pattern[str]:
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


def _compile(raw_packs: dict[str, dict[str, Any]], use_triggers: bool) -> RuleSet:
    packs: dict[str, _Pack] = {}
    for language, raw in raw_packs.items():
        veto = _combine(raw["vetoes"]) if raw["vetoes"] else None
        categories: dict[str, _Category] = {}
        for category in CATEGORIES:
            alternatives, unless = [], {}
            gate: list[str] | None = [] if use_triggers else None
            for index, (cat, body, vetoes, triggers) in enumerate(raw["rules"]):
                if cat != category:
                    continue
                gate = None if gate is None or triggers is None else gate + list(triggers)
                group = f"r{index}"
                if vetoes:  # only a rule with vetoes needs to be told apart
                    alternatives += [f"(?P<{group}_{n}>{alt})" for n, alt in enumerate(body)]
                    unless[group] = re.compile("|".join(vetoes), re.I)
                else:
                    alternatives += body
            if alternatives:
                literals = "|".join(map(re.escape, dict.fromkeys(gate))) if gate else None
                triggers = re.compile(literals) if literals else None
                categories[category] = _Category(_combine(alternatives), unless, triggers)
        packs[language] = _Pack(veto, categories)
    return RuleSet(packs)


def load_rules(extra_dir: Path | None = None, *, use_triggers: bool = True) -> RuleSet:
    """Compile the built-in packs plus every ``*.toml`` pack in ``extra_dir``.

    ``use_triggers=False`` ignores the rules' triggers (every category's pattern
    runs on every message): the same results, slower; for checking triggers.
    """
    raw_packs: dict[str, dict[str, Any]] = {}
    folder = resources.files(__package__).joinpath("rules")
    for language in ("en", "uz", "ru", "zh"):
        resource = folder.joinpath(f"{language}.toml")
        _read_pack(f"{language}.toml", resource.read_text(encoding="utf-8"), raw_packs)
    if extra_dir is not None:
        for path in sorted(Path(extra_dir).glob("*.toml")):
            try:
                raw = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput(f"capture rules {path}: cannot read: {exc}") from None
            _read_pack(str(path), raw, raw_packs)
    return _compile(raw_packs, use_triggers)


_DEFAULT = load_rules()


def _detect(text: str) -> list[str]:
    found = []
    if _CYRILLIC.search(text):
        found.append("ru")
    if _CJK.search(text):
        found.append("zh")
    return found or ["en", "uz"]


def _sentence(text: str, pos: int) -> tuple[int, int]:
    start = 0
    for end_mark in _SENTENCE_END.finditer(text, 0, pos):
        start = end_mark.end()
    tail = _SENTENCE_END.search(text, pos)
    end = tail.end() if tail else len(text)
    while start < end and text[start].isspace():
        start += 1
    return start, end


def _quoted(text: str, pos: int) -> bool:
    return any(q.start() < pos < q.end() for q in _QUOTED.finditer(text))


def scan(
    text: str, *, languages: Sequence[str] | None = None, rules: RuleSet | None = None
) -> list[Entry]:
    """The entries ``text`` holds, at most one per category, in message order."""
    packs = (rules or _DEFAULT).packs
    found: dict[str, Entry] = {}
    vetoed: dict[tuple[str, int, int], bool] = {}
    lowered = text.lower()
    for language in languages if languages is not None else _detect(text):
        pack = packs.get(language)
        if pack is None:
            raise InvalidInput(f"no capture rules for language {language!r}")
        for category, compiled in pack.categories.items():
            if category in found:
                continue
            if compiled.triggers and not compiled.triggers.search(lowered):
                continue
            for match in compiled.pattern.finditer(text):
                span = _sentence(text, match.start())
                sentence = text[span[0] : span[1]]
                key = (language, *span)
                if key not in vetoed:
                    vetoed[key] = bool(pack.veto and pack.veto.search(sentence))
                unless = compiled.unless.get((match.lastgroup or "").partition("_")[0])
                if vetoed[key] or (unless and unless.search(sentence)):
                    continue
                if _quoted(text, match.start()):
                    continue
                found[category] = Entry(category, sentence, span)
                break
    return sorted(found.values(), key=lambda e: (e.span[0], CATEGORIES.index(e.category)))
