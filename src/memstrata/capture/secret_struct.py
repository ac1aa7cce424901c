"""Secrets inside structured data (the ``capture.secrets`` redactor's JSON half).

Tool calls carry their arguments as a JSON string or a mapping, tool results
are often JSON, and people paste JSON into messages. Scanning such text as
prose misses what escaping hides (``{\\"password\\": \\"x\\"}``) and can cut
through its quotes and brackets; so JSON is decoded first, walked, and the
secrets in it replaced where they stand.

* ``redact_json(text, ...)``: every JSON object or array in ``text`` (the whole
  text, one per line, or one inside prose: an object starts at ``{"``, an array
  at ``[{``, ``[[`` or ``["``) is parsed with the position of each value. A
  value under a credential-named key (``credential_kind``) is replaced whole,
  whatever its shape, by the JSON string ``"[REDACTED:kind]"``; every other
  string (keys too) is redacted as text, which decodes a JSON string inside a
  JSON string in turn; an integer of 13 digits or more is redacted as text (a
  card). Only the replaced values change: spacing, key order and the rest of
  the text stay byte for byte. A JSON object or array after a credential label
  (``x_password: {...}``, ``token = [...]``) is replaced whole by the marker.
  The text between JSON values is redacted as prose.
* ``redact_data(value, ...)``: the same walk over mappings and lists; a
  mapping stays a mapping with the same keys, a list a list of the same
  length, a JSON string a JSON string.

Invariants: a value holding no secret comes back unchanged (the very same
text); a JSON text stays valid JSON with the same keys and nesting; redacting
the output again changes nothing. A value under a credential key is kept when
it holds nothing (``null``, ``true``/``false``, ``""``, ``{}``, ``[]``, a
marker) and, for ``pwd``, when it is a path (``/home/me``, ``~/src``).

Limits: JSON nested deeper than ``_MAX_DEPTH`` and text that is not valid JSON
(cut short, Python reprs with single quotes) are redacted as prose; at most
``_MAX_TRIES`` starts of JSON that do not parse are tried per text; an array
inside prose is taken only when it starts with an object, array or string.

Speed: most JSON holds nothing to redact, and a few scans of its text in C say
so (``_clean``: no credential word, no escape, no shape the prose rules find):
about twice what reading the text as prose costs. Otherwise each object or array
down to ``_SKIP_DEPTH`` is decoded by the C parser and its values checked
(``_holds_any``), and only those that hold a secret are walked position by
position in Python.
"""

from __future__ import annotations

import json
import re
from _json import scanstring  # the C scanner json.decoder uses (typed, unlike its alias)
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import InvalidInput

__all__ = [
    "Redacted",
    "Redactor",
    "TextRules",
    "credential_kind",
    "quiet",
    "redact_data",
    "redact_json",
]


@dataclass(frozen=True, slots=True)
class Redacted:
    """The outcome of ``redact``: the safe text and the kinds replaced in it, in order."""

    text: str
    kinds: tuple[str, ...]


Redactor = Callable[[str], Redacted]


@dataclass(frozen=True, slots=True)
class TextRules:
    """What the JSON walk needs of the text redactor (``capture.secrets``)."""

    redact: Redactor  # a decoded string; JSON-aware, so JSON inside it is walked in turn
    prose: Redactor  # the text around JSON values, read as prose
    finds: Callable[[str], bool]  # whether the prose rules find a secret in the text as is


_MAX_DEPTH = 100
_MAX_TRIES = 16
# Down to this depth a clean object or array is skipped whole (decoded by the C parser,
# checked by one scan of its text) rather than walked value by value.
_SKIP_DEPTH = 8
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
# Where a JSON object or array may start (a key, or an array of objects/arrays/strings).
_START = re.compile(r"\{[ \t\r\n]*\"|\[[ \t\r\n]*[\[{\"]")
_WS = re.compile(r"[ \t\r\n]*")
_LITERAL = re.compile(
    r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity"
)
# A credential name and its separator right before a JSON value: "x_password: {".
_LABEL = re.compile(
    r"(?P<name>[A-Za-z0-9_.\-]+)[\"'`]?[ \t]*(?:=>|:=|[=:：])[ \t]*(?:\r?\n[ \t]*)?\Z"
)
_LABEL_WINDOW = 80

# --- credential names ---------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_PASSWORDS = frozenset({"password", "passwd", "pwd", "passphrase", "passcode"})
_TOKENS = frozenset({"token", "authorization", "auth", "cookie", "cookies", "bearer"})
_KEYS = frozenset({"secret", "apikey", "secretkey", "accesskey", "credential", "credentials"})
_CARDS = frozenset({"cvv", "cvc", "cvv2", "cardnumber"})
_KEY_QUALIFIERS = frozenset(
    {"api", "secret", "access", "signing", "encryption", "master", "client", "auth"}
)
_GLUED = (  # a credential word glued to a qualifier: PGPASSWORD, accesstoken, clientsecret
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("accesstoken", "token"),
    ("refreshtoken", "token"),
    ("authtoken", "token"),
    ("sessiontoken", "token"),
    ("idtoken", "token"),
    ("privatekey", "private_key"),
    ("apikey", "api_key"),
    ("secretkey", "api_key"),
    ("clientsecret", "api_key"),
)


@lru_cache(maxsize=4096)
def credential_kind(name: str) -> str | None:
    """The kind of secret a value named ``name`` holds, or None for an ordinary name.

    Case and separators do not matter (``apiKey``, ``API-KEY``, ``api_key``); the
    last word decides (``x_password``, ``db.passwd``, ``GITHUB_TOKEN``,
    ``client_secret``, ``X-Api-Key``), so ``max_tokens``, ``token_count``,
    ``password_required`` and ``primary_key`` are ordinary names.
    """
    if len(name) > 80:
        return None
    parts = [part.lower() for part in _SEPARATORS.split(_CAMEL.sub("_", name)) if part]
    if not parts:
        return None
    last = parts[-1]
    qualifier = parts[-2] if len(parts) >= 2 else ""
    if last in _PASSWORDS:
        return "password"
    if last in _TOKENS:
        return "token"
    if last == "key" and qualifier == "private":
        return "private_key"
    if last in _KEYS or (last == "key" and qualifier in _KEY_QUALIFIERS):
        return "api_key"
    if last in _CARDS or (last == "number" and qualifier == "card"):
        return "card"
    for suffix, kind in _GLUED:
        if last.endswith(suffix) and last[: -len(suffix)].isalpha():
            return kind
    return None


def _holds_secret(value: Any, kind: str, name: str) -> bool:
    """Whether ``value``, under the credential name ``name``, holds something to hide."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, str):
        if not value.strip() or _MARKER.fullmatch(value.strip()):
            return False
        # PWD=/home/me is the shell's working directory, not a password.
        return not (kind == "password" and name.lower().endswith("pwd") and value[:1] in "/~")
    if isinstance(value, (dict, list, tuple)):
        return bool(value)
    return True


# --- JSON text ----------------------------------------------------------------------------------


class _NotJson(Exception):
    """The text at this position is not a JSON value."""


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, duplicate keys included."""


_DECODER = json.JSONDecoder(object_pairs_hook=_Pairs)


class _Scan:
    """One JSON value parsed at a position: its end and the replacements to make in it."""

    __slots__ = ("edits", "kinds", "rules", "text")

    def __init__(self, text: str, rules: TextRules) -> None:
        self.text = text
        self.rules = rules
        self.edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in order
        self.kinds: list[str] = []

    def value(self, at: int, depth: int) -> int:
        text = self.text
        first = text[at : at + 1]
        if first == '"':
            return self.string(at)
        if first in ("{", "["):
            if depth >= _MAX_DEPTH:
                raise _NotJson
            if depth < _SKIP_DEPTH:
                end = self.clean_end(at)
                if end is not None:
                    return end
            return self.obj(at, depth + 1) if first == "{" else self.array(at, depth + 1)
        literal = _LITERAL.match(text, at)
        if literal is None:
            raise _NotJson
        if literal.end() - at >= 13 and literal.group().isdigit():  # a card, maybe
            self.replace(at, literal.end(), literal.group())
        return literal.end()

    def clean_end(self, at: int) -> int | None:
        """The end of the object or array at ``at`` when nothing in it is a secret.

        The C parser decodes it first (which also says, fast, whether it is JSON at
        all); then one scan of its text (``_clean``; the whole text was scanned already)
        or a walk of what it holds (cheaper than walking its text) tells."""
        try:
            value, end = _DECODER.raw_decode(self.text, at)
        except (ValueError, RecursionError) as exc:
            raise _NotJson from exc
        end = int(end)
        if not (at == 0 and end == len(self.text)) and _clean(self.text[at:end], self.rules):
            return end
        try:
            return None if _holds_any(value, self.rules.redact) else end
        except RecursionError:
            return None

    def string(self, at: int) -> int:
        try:
            decoded, end = scanstring(self.text, at + 1, True)
        except ValueError as exc:
            raise _NotJson from exc
        self.replace(at, end, decoded)
        return end

    def replace(self, start: int, end: int, decoded: str, *, key: bool = False) -> None:
        """Replace the JSON literal at ``start:end`` by a string when ``decoded`` holds secrets."""
        if quiet(decoded):
            return
        safe = _redact_key(decoded, self.rules.redact) if key else self.rules.redact(decoded)
        if safe.kinds:
            ascii_only = "\\u" in self.text[start:end]  # it used \uXXXX escapes: keep to them
            self.edits.append((start, end, json.dumps(safe.text, ensure_ascii=ascii_only)))
            self.kinds.extend(safe.kinds)

    def obj(self, at: int, depth: int) -> int:
        text = self.text
        position = _skip(text, at + 1)
        if text[position : position + 1] == "}":
            return position + 1
        while True:
            if text[position : position + 1] != '"':
                raise _NotJson
            try:
                key, key_end = scanstring(text, position + 1, True)
            except ValueError as exc:
                raise _NotJson from exc
            self.replace(position, key_end, key, key=True)
            position = _skip(text, key_end)
            if text[position : position + 1] != ":":
                raise _NotJson
            position = _skip(text, position + 1)
            kind = credential_kind(key)
            end = self.value(position, depth) if kind is None else self.secret(position, kind, key)
            position = _skip(text, end)
            separator = text[position : position + 1]
            if separator == "}":
                return position + 1
            if separator != ",":
                raise _NotJson
            position = _skip(text, position + 1)

    def array(self, at: int, depth: int) -> int:
        text = self.text
        position = _skip(text, at + 1)
        if text[position : position + 1] == "]":
            return position + 1
        while True:
            position = _skip(text, self.value(position, depth))
            separator = text[position : position + 1]
            if separator == "]":
                return position + 1
            if separator != ",":
                raise _NotJson
            position = _skip(text, position + 1)

    def secret(self, at: int, kind: str, name: str) -> int:
        """The value under a credential name: replaced whole when it holds something."""
        try:
            value, end = _DECODER.raw_decode(self.text, at)
        except (ValueError, RecursionError) as exc:
            raise _NotJson from exc
        if _holds_secret(value, kind, name):
            self.edits.append((at, end, f'"[REDACTED:{kind}]"'))
            self.kinds.append(kind)
        return int(end)

    def result(self, start: int, end: int) -> str:
        """The text of the value at ``start:end`` with the replacements made."""
        pieces: list[str] = []
        done = start
        for edit_start, edit_end, replacement in self.edits:
            pieces.append(self.text[done:edit_start])
            pieces.append(replacement)
            done = edit_end
        pieces.append(self.text[done:end])
        return "".join(pieces)


def _holds_any(value: Any, redact: Redactor) -> bool:
    """Whether the walk of ``_Scan`` would replace something in this decoded value."""
    if isinstance(value, str):
        return not quiet(value) and bool(redact(value).kinds)
    if isinstance(value, _Pairs):
        for key, item in value:
            if not quiet(key) and _redact_key(key, redact).kinds:
                return True
            kind = credential_kind(key)
            if _holds_secret(item, kind, key) if kind else _holds_any(item, redact):
                return True
        return False
    if isinstance(value, list):
        return any(_holds_any(item, redact) for item in value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10**12:
        return bool(redact(str(value)).kinds)
    return False


_KEYS_SEEN: dict[str, Redacted] = {}


def _redact_key(key: str, redact: Redactor) -> Redacted:
    """``redact(key)``, remembered: the keys of JSON data repeat."""
    found = _KEYS_SEEN.get(key)
    if found is None:
        if len(_KEYS_SEEN) >= 4096:
            _KEYS_SEEN.clear()
        found = _KEYS_SEEN[key] = redact(key)
    return found


def _skip(text: str, position: int) -> int:
    """The first position at or after ``position`` that is not JSON whitespace."""
    if text[position : position + 1] not in _SPACES:  # ("" is in every string)
        return position
    match = _WS.match(text, position)
    return position if match is None else match.end()


_SPACES = " \t\r\n"


def _parse(text: str, start: int, rules: TextRules) -> tuple[int, _Scan] | None:
    scan = _Scan(text, rules)
    try:
        return scan.value(start, 0), scan
    except (_NotJson, RecursionError):
        return None


def redact_json(text: str, rules: TextRules) -> Redacted | None:
    """``text`` with the secrets of its JSON values replaced, or None when it holds no
    JSON value (then it is prose)."""
    if _clean(text, rules):
        return Redacted(text, ())
    found = _values(text, rules)
    if not found:
        return None
    pieces: list[str] = []
    kinds: list[str] = []
    done = 0
    for start, end, scan in found:
        before = rules.prose(text[done:start])
        pieces.append(before.text)
        kinds.extend(before.kinds)
        label = _LABEL.search(text, max(done, start - _LABEL_WINDOW), start)
        kind = credential_kind(label.group("name")) if label is not None else None
        if kind is not None and end - start > 2 and _has_content(text[start:end]):
            pieces.append(f"[REDACTED:{kind}]")
            kinds.append(kind)
        else:
            pieces.append(scan.result(start, end))
            kinds.extend(scan.kinds)
        done = end
    after = rules.prose(text[done:])
    pieces.append(after.text)
    kinds.extend(after.kinds)
    return Redacted("".join(pieces), tuple(kinds))


def _values(text: str, rules: TextRules) -> list[tuple[int, int, _Scan]]:
    """(start, end, scan) of each JSON value in ``text``, in order."""
    found = _leading(text, rules)
    position, tries = (found[0][1], 0) if found else (0, 0)
    while tries < _MAX_TRIES:
        candidate = _START.search(text, position)
        if candidate is None:
            break
        parsed = _parse(text, candidate.start(), rules)
        if parsed is None:
            tries += 1
            position = candidate.start() + 1
            continue
        found.append((candidate.start(), parsed[0], parsed[1]))
        position = parsed[0]
    return found


def _leading(text: str, rules: TextRules) -> list[tuple[int, int, _Scan]]:
    """The JSON value the text starts with: an object or array (``[null, 1]`` too, which
    ``_START`` does not take inside prose), or a string that is the whole text."""
    start = _skip(text, 0)
    first = text[start : start + 1]
    if first not in ("{", "[", '"') or (first == '"' and text.rstrip()[-1:] != '"'):
        return []
    parsed = _parse(text, start, rules)
    if parsed is None or (first == '"' and _skip(text, parsed[0]) != len(text)):
        return []
    return [(start, parsed[0], parsed[1])]


# --- what cannot hold a secret ------------------------------------------------------------------

# On lower-cased text: every trigger of a word rule, credential name and command
# (``command_passwords``); every trigger of a shape (as ``capture.secrets._find`` has
# them, or narrower: a URL password needs an @ before any slash, a prefixed key its prefix).
_WORDS = re.compile(
    r"key|secret|token|credential|pass|pwd|pin|parol|bearer|auth|cookie|cvv|cvc|card"
    r"|mysql|mariadb|curl|парол|密码"
)
_SHAPES = re.compile(
    r"-----begin|sk-|glpat-|xox[abpr]-|akia|asia|aiza|eyj|(?:sk|rk|gh[pousr]|hf|github_pat)_"
    r"|://[^\s/]*@|[0-9](?:[ -]?[0-9]){12}"
)
_DIGITS_AFTER_COMMA = re.compile(r"[0-9],[0-9](?:[ -]?[0-9]){12}")


def quiet(text: str) -> bool:
    """No trigger of any rule in ``text`` (nor JSON): redacting it cannot change it.

    One scan or two, cheaper than ``redact`` for the short strings of JSON data.
    """
    if len(text) < 4:  # nothing shorter holds a secret ("密码是x" is the shortest)
        return True
    if '"' in text or "{" in text or "[" in text:
        return False
    folded = text.lower()
    return _WORDS.search(folded) is None and _SHAPES.search(folded) is None


def _clean(text: str, rules: TextRules) -> bool:
    """Nothing in ``text`` can be redacted, the JSON in it included.

    No word of a word rule, credential name or command, and no escape: then only shapes
    can be secrets, and a shape in a JSON string is in the JSON text too (the prose rules
    find it there), but for an integer right after a comma, which ``cards`` takes for
    the decimals of a number.
    """
    folded = text.lower()
    if "\\" in text or _WORDS.search(folded) is not None:
        return False
    if _SHAPES.search(folded) is None:
        return True
    return _DIGITS_AFTER_COMMA.search(text) is None and not rules.finds(text)


def _has_content(json_text: str) -> bool:
    try:
        return bool(json.loads(json_text))
    except (ValueError, RecursionError):
        return True


# --- mappings and lists -------------------------------------------------------------------------


def redact_data(value: Any, redact: Redactor) -> tuple[Any, tuple[str, ...]]:
    """``value`` with every secret in it replaced, its shape kept; and the kinds replaced.

    Mappings become dicts with the same keys (a key that itself held a secret is
    redacted too), lists and tuples become lists of the same length, strings are
    redacted with ``redact`` (a JSON string stays a JSON string), integers of 13
    digits or more as text; other values come back as they are. ``InvalidInput``
    for data nested deeper than ``_MAX_DEPTH`` * 2.
    """
    kinds: list[str] = []
    try:
        safe = _walk(value, 0, redact, kinds)
    except RecursionError as exc:
        raise InvalidInput("the data is nested too deeply to be stored") from exc
    return safe, tuple(kinds)


def _walk(value: Any, depth: int, redact: Redactor, kinds: list[str]) -> Any:
    if isinstance(value, str):
        if quiet(value):
            return value
        safe = redact(value)
        kinds.extend(safe.kinds)
        return safe.text
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        if value < 10**12:  # (as in JSON text: a minus sign makes no card)
            return value
        safe = redact(str(value))
        kinds.extend(safe.kinds)
        return safe.text if safe.kinds else value
    if depth >= 2 * _MAX_DEPTH:
        raise InvalidInput("the data is nested too deeply to be stored")
    if isinstance(value, Mapping):
        return _walk_mapping(value, depth, redact, kinds)
    if isinstance(value, (list, tuple)):
        return [_walk(item, depth + 1, redact, kinds) for item in value]
    return value


def _walk_mapping(
    value: Mapping[Any, Any], depth: int, redact: Redactor, kinds: list[str]
) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, item in value.items():
        safe_key = key
        if isinstance(key, str) and not quiet(key):
            redacted_key = _redact_key(key, redact)
            safe_key = redacted_key.text
            kinds.extend(redacted_key.kinds)
            while safe_key in out:  # two keys that differed only by their secrets
                safe_key += "'"
        kind = credential_kind(key) if isinstance(key, str) else None
        if kind is not None and _holds_secret(item, kind, key):
            out[safe_key] = f"[REDACTED:{kind}]"
            kinds.append(kind)
        else:
            out[safe_key] = _walk(item, depth + 1, redact, kinds)
    return out
