"""Secret redaction: a secret in a message is replaced before the message can reach disk.

``redact(text)`` returns the text with every secret it recognises replaced by
``[REDACTED:kind]``, and the kinds it replaced, in order of appearance (a kind
repeats when it is found twice). ``contains_secret(text)`` says whether
``redact`` would change anything. ``redact_value(value)`` does the same for
mappings and lists (tool arguments and results), keeping their shape.

JSON comes first: JSON in a text (the whole text, each line of JSON lines, an
object inside prose) is decoded and walked (``capture/secret_struct.py``): a
value under a credential-named key (``password``, ``apiKey``, ``API-KEY``,
``client_secret``, ``access_token``, ``Authorization``, ``cookie`` ...) is
replaced whole, whatever its shape; strings, JSON strings inside JSON included,
are redacted as below; only the secrets' bytes change, so JSON stays JSON. The
rest of the text is read as prose, where the kinds recognised are:

* ``private_key``, ``token`` (JSON Web Tokens), ``api_key`` with a well-known
  prefix (``sk-``, ``ghp_``, ``AKIA`` ...), ``card`` and ``connection_string``:
  by their shape (``capture/secret_shapes.py`` lists them);
* ``api_key``: the value of an assignment to a credential-named identifier
  (``api_key=``, ``API_KEY:``, ``"apiKey": "..."``, ``X-Api-Key:``,
  ``secret=``, ``client_secret``, ``access_token=``, ``aws_secret_access_key``,
  ``private_key`` ...) of 8 non-space characters or more (6 on an env line:
  ``GITHUB_TOKEN=``, ``APP_SECRET=``);
* ``token``: the token after ``Bearer`` (in prose or an ``Authorization``
  header) of 8 characters or more that looks generated (a digit, mixed case or
  a symbol), so that "bearer authentication" stays;
* ``password``: the value after a password marker, the marker words kept:
  ``password:``, ``password =``, ``DB_PASSWORD=``, ``"password": "..."``,
  ``PGPASSWORD=``, ``MYSQL_PWD=``, ``pwd:``, ``passcode:``, ``passcode is``,
  ``my password is`` (also ``my wifi password is``, ``your password is``, ``my
  PIN is`` + digits); ``mysql -pX``, ``mysql --password=X``, ``curl -u
  user:X``; Russian
  ``пароль:``, ``пароль —``, ``пароль это``, ``мой пароль ...``; Uzbek
  ``parol:``, ``parolim:``, ``(mening) parolim ...``; Chinese ``密码是``,
  ``密码为``, ``密码：``. The value is the quoted string when quoted, else the
  next whitespace-delimited token (punctuation glued to it goes with it); after
  ``password:`` (any assignment) with nothing after it, the next line when the
  value stands alone on it; after a credential label, a JSON object or array
  (``x_password: {...}``) whole.

Invariants:

* a text in which nothing is recognised comes back as the very same string
  with ``kinds == ()``;
* only the secret's characters are replaced; marker words, quotes, the rest of
  the sentence, the non-secret parts of a URL and the structure of JSON are kept;
* finds that overlap are merged into one marker (the kind of the one that
  starts first, the longer one on a tie);
* ``kinds`` has one entry per marker made, in the order of the markers;
* idempotent: redacting the output again changes nothing and finds nothing
  (``redact`` runs its rules to a fixed point, and a marker counts as a letter
  for every boundary check, so it never completes a new match).

Limits: this is a pattern matcher, not a classifier. It does NOT detect
free-form secrets with no marker and no known shape ("it's hunter2", "the wifi
code is on the fridge: 4821"), prefix-less keys given without a credential
name (an AWS *secret* key, a random hex token pasted on its own), passwords
phrased other ways ("the password is ...", "use X to log in", other
languages), secrets split across messages, or encoded/obfuscated secrets.
Heuristics that keep ordinary prose intact can also miss a real secret:
"my password is" followed by a common word ("... is strong"), ``мой пароль``
followed by a purely Cyrillic word, ``parolim`` followed by a plain word
("qwerty"), an unquoted all-lowercase value after ``API_KEY:`` (``=`` has no
such rule), a bare ``token=``/``key=`` in prose (only qualified names count:
``access_token``, ``api_key``; JSON keys need no qualifier), a Bearer token
that looks like a word, a card the shapes do not take (``secret_shapes``), a
quoted value longer than 200 characters (only its first token is then
redacted). Conversely the token after a marker is taken whole, punctuation
glued to it included ("password: x1," loses the comma).

Speed: a message with no trigger word or shape costs substring tests only
(about 3 µs for 200 characters); each triggered rule adds one regex scan. A
text with JSON in it costs about two such scans when nothing in it can be a
secret, else a walk of the objects that hold a trigger.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .secret_shapes import (
    ASCII_ALNUM,
    DIGITS,
    JWT,
    NOT_DIGITS,
    PEM,
    PREFIXED,
    URL_PASSWORD,
    cards,
    command_passwords,
    marker_before,
    prefixed_ok,
    random_looking,
)
from .secret_struct import Redacted, TextRules, redact_data, redact_json

__all__ = ["Redacted", "contains_secret", "redact", "redact_value"]

_MARK = "[REDACTED:"


def redact(text: str) -> Redacted:
    """``text`` with every recognised secret replaced by ``[REDACTED:kind]``.

    JSON in the text is decoded and walked first (``secret_struct``), so that its
    structure is kept; the rest is redacted as prose.
    """
    if "{" in text or "[" in text or text[:1] == '"':  # JSON, maybe (secret_struct)
        found = redact_json(text, _JSON_RULES)
        if found is not None:
            return found
    return _redact_prose(text)


def redact_value(value: Any) -> tuple[Any, tuple[str, ...]]:
    """``value`` (mappings, lists, strings, numbers) with every secret replaced, its shape
    kept; and the kinds replaced, in order. See ``secret_struct.redact_data``."""
    return redact_data(value, redact)


def contains_secret(text: str) -> bool:
    """True when ``redact(text)`` would replace something."""
    if "{" in text or "[" in text or text[:1] == '"':
        return bool(redact(text).kinds)
    return bool(_merged(text))


def _redact_prose(text: str) -> Redacted:
    """``redact`` for text read as prose (JSON in it is not decoded).

    The rules run again on their own output until they find nothing: a replacement can
    uncover a secret the first pass could not see (a secret glued to another one), and
    running to that fixed point is what makes ``redact`` idempotent. A text with no
    secret takes one pass; one with secrets usually two.
    """
    markers: list[tuple[int, str]] = []  # (position, kind) of the markers made so far
    for _ in range(_MAX_PASSES):
        spans = _merged(text)
        if not spans:
            break
        text, markers = _replace(text, spans, markers)
    return Redacted(text, tuple(kind for _, kind in markers))


# Each pass replaces at least one character that is not part of a marker, so passes
# end; in practice the second one finds nothing. The cap only bounds the worst case.
_MAX_PASSES = 8


def _replace(
    text: str, spans: list[_Find], markers: list[tuple[int, str]]
) -> tuple[str, list[tuple[int, str]]]:
    """Replace ``spans`` by markers; move the earlier ``markers`` along (or drop swallowed ones)."""
    pieces: list[str] = []
    placed: list[tuple[int, str]] = []
    length = done = carried = 0

    def carry(before: int) -> None:
        nonlocal carried
        while carried < len(markers) and markers[carried][0] < before:
            position, kind = markers[carried]
            carried += 1
            if position >= done:  # else it was inside the span just replaced
                placed.append((length + position - done, kind))

    for start, end, kind in spans:
        carry(start)
        pieces.append(text[done:start])
        length += start - done
        tag = f"{_MARK}{kind}]"
        pieces.append(tag)
        placed.append((length, kind))
        length += len(tag)
        done = end
    carry(len(text) + 1)
    pieces.append(text[done:])
    return "".join(pieces), placed


_JSON_RULES = TextRules(redact, _redact_prose, lambda text: bool(_merged(text)))

# --- finding ------------------------------------------------------------------------------------

# A find: (start, end, kind) of the characters to replace.
_Find = tuple[int, int, str]

_IDENT = ASCII_ALNUM | frozenset("_.-")


def _merged(text: str) -> list[_Find]:
    """The finds of every rule, sorted and merged where they overlap."""
    finds = _find(text)
    if not finds:
        return finds
    finds.sort(key=lambda find: (find[0], -find[1]))
    merged = [finds[0]]
    for start, end, kind in finds[1:]:
        last_start, last_end, last_kind = merged[-1]
        if start < last_end:
            merged[-1] = (last_start, max(end, last_end), last_kind)
        else:
            merged.append((start, end, kind))
    return merged


def _find(text: str) -> list[_Find]:
    """Every rule's finds. A rule runs only when its cheap trigger is in the text.

    The triggers are substring tests (tens of nanoseconds each), because any regular
    expression scan costs about a microsecond per 200 characters: a message with no
    trigger costs a handful of substring tests and no scan at all.
    """
    finds: list[_Find] = []
    if "-----BEGIN" in text:
        finds.extend((m.start(), m.end(), "private_key") for m in PEM.finditer(text))
    if (
        "_" in text  # sk_live_ rk_live_ ghp_ github_pat_ hf_ ...
        or "sk-" in text
        or "glpat-" in text
        or "xox" in text
        or "AKIA" in text
        or "ASIA" in text
        or "AIza" in text
    ):
        for m in PREFIXED.finditer(text):
            if prefixed_ok(text, m):
                finds.append((m.start(), m.end(), "api_key"))
    if "eyJ" in text:
        for m in JWT.finditer(text):
            if not marker_before(text, m.start()):
                finds.append((m.start(), m.end(), "token"))
    if "://" in text:
        for m in URL_PASSWORD.finditer(text):
            _add_value(finds, text, m.start("v"), m.end("v"), "connection_string")
    # A card has 13 ASCII digits or more; UTF-8 keeps them one byte each, and counting
    # them with bytes.translate is several times faster than str.count or a scan.
    if len(text.encode("utf-8", "surrogatepass").translate(None, NOT_DIGITS)) >= 13:
        for m in DIGITS.finditer(text):
            finds.extend((start, end, "card") for start, end in cards(text, m.start(), m.end()))
    folded = text.lower()
    if ("-p" in text or "-u" in text) and (
        "mysql" in folded or "mariadb" in folded or "curl" in folded
    ):
        for start, end in command_passwords(text):
            _add_value(finds, text, start, end, "password")
    if _has_word_trigger(folded):
        # The word rules scan the lower-cased text (literal prefixes, no case folding at
        # match time); that needs the positions to line up, which a few characters break
        # ("İ" lowers to two characters): then the case-insensitive twin scans the text.
        aligned = len(folded) == len(text)
        scanned = folded if aligned else text
        for rule in _WORD_RULES:
            if any(trigger in folded for trigger in rule.triggers):
                pattern = rule.lower if aligned else rule.anycase
                _scan(rule, pattern, scanned, text, finds)
    return finds


def _scan(
    rule: _WordRule, pattern: re.Pattern[str], scanned: str, text: str, finds: list[_Find]
) -> None:
    """Run one word rule over the text.

    After a refused match the scan resumes at its value, not after it, so that a value
    cannot hide a marker ("?token=abc&password=hunter2": the bare "token" names nothing,
    its value holds a password). Values are at most ``_TOKEN_MAX`` characters long, which
    keeps these rescans linear; an accepted value that long is extended to its end here.
    """
    position = 0
    while (m := pattern.search(scanned, position)) is not None:
        found = len(finds)
        rule.accept(finds, text, m)
        if len(finds) == found:
            position = m.start("v")
            continue
        start, end, kind = finds[-1]
        if end == m.end("v") and end - m.start("v") == _TOKEN_MAX:
            rest = _TOKEN_REST.match(text, end)
            end = rest.end() if rest is not None else end
            finds[-1] = (start, end, kind)
        position = max(m.end(), end)


def _has_word_trigger(folded: str) -> bool:
    """Whether a word rule may match: every rule's triggers contain one of these."""
    return (
        "key" in folded
        or "secret" in folded
        or "token" in folded
        or "credential" in folded
        or "pass" in folded
        or "pwd" in folded
        or "pin" in folded
        or "parol" in folded
        or "bearer" in folded
        or (not folded.isascii() and ("парол" in folded or "密码" in folded))
    )


def _value_span(text: str, start: int, end: int) -> tuple[int, int, bool]:
    """The value ``text[start:end]`` without its quotes and cut at a redaction marker.

    Returns (start, end, quoted). An opening quote with no closing one is kept too:
    were it redacted, the text left would read differently the second time (the quote
    could pair with another one).
    """
    quoted = False
    if start < end and text[start] in _QUOTES:
        quoted = end - start >= 2 and text[end - 1] == _QUOTES[text[start]]
        start, end = start + 1, (end - 1 if quoted else end)
    cut = text.find(_MARK, start, end)
    return start, (end if cut < 0 else cut), quoted


def _add_value(finds: list[_Find], text: str, start: int, end: int, kind: str) -> None:
    start, end, _ = _value_span(text, start, end)
    if end > start:
        finds.append((start, end, kind))


# --- words --------------------------------------------------------------------------------------

_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "«": "»", "„": "“", "「": "」", "『": "』"}

# A value: a quoted string, or the next whitespace-delimited token (CJK punctuation and a
# redaction marker end it). Both are bounded (see ``_scan``).
_TOKEN_MAX = 200
_TOKEN = r"(?:[^\s，。；！？、\[]|\[(?!redacted:))"
_TOKEN_REST = re.compile(_TOKEN.replace("redacted:", "(?i:redacted:)") + "*")
_VALUE = (
    r"""(?P<v>"[^"\n]{0,200}"|'[^'\n]{0,200}'|`[^`\n]{0,200}`|“[^”\n]{0,200}”"""
    r"""|«[^»\n]{0,200}»|„[^“\n]{0,200}“"""
    f"|{_TOKEN}{{1,{_TOKEN_MAX}}})"
)
# A value that does not start with a separator (weak markers have none of their own).
_BARE_VALUE = r"(?![:=：—–-])" + _VALUE


class _WordRule:
    """A case-insensitive rule: compiled for lower-cased text and for any case, each
    when first needed (a text with a trigger), not at import (20 ms, readers too)."""

    __slots__ = ("_anycase", "_lower", "accept", "source", "triggers")

    def __init__(
        self,
        triggers: tuple[str, ...],
        source: str,
        accept: Callable[[list[_Find], str, re.Match[str]], None],
    ) -> None:
        self.triggers, self.source, self.accept = triggers, source, accept
        self._lower: re.Pattern[str] | None = None
        self._anycase: re.Pattern[str] | None = None

    @property
    def lower(self) -> re.Pattern[str]:  # two threads may both compile it: the same pattern
        self._lower = self._lower or re.compile(self.source)
        return self._lower

    @property
    def anycase(self) -> re.Pattern[str]:
        self._anycase = self._anycase or re.compile(self.source, re.IGNORECASE)
        return self._anycase


def _word_rule(
    triggers: tuple[str, ...],
    pattern: str,
    accept: Callable[[list[_Find], str, re.Match[str]], None],
) -> _WordRule:
    return _WordRule(triggers, pattern, accept)


_PASSWORD_NAMES = frozenset({"password", "passwd", "pwd", "passcode", "passphrase"})
_KEY_NAMES = frozenset(
    {"secret", "apikey", "secretkey", "accesskey", "privatekey", "credential", "credentials"}
)
_KEY_QUALIFIERS = frozenset(
    {"api", "secret", "access", "private", "signing", "encryption", "master", "client", "auth"}
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NAME_PARTS = re.compile(r"[\s_.\-]+")
_SPACED_QUALIFIER = re.compile(r"(?i:\b(api|secret|access|private|auth|refresh))[ \t]$")


def _name_parts(text: str, start: int, end: int) -> list[str]:
    """The words of the identifier ending at ``end`` whose keyword starts at ``start``.

    ``OPENAI_API_KEY`` -> openai api key; ``apiKey`` -> api key; a keyword after a
    plain qualifier word counts too (``API key:`` -> api key). A keyword glued to
    other letters is one word (``1Password``, ``monkey``), so it names nothing.
    """
    begin = start
    while begin and text[begin - 1] in _IDENT:
        begin -= 1
    if marker_before(text, begin):
        return []
    if begin == start:
        spaced = _SPACED_QUALIFIER.search(text, max(0, start - 12), start)
        if spaced is not None:
            begin = spaced.start()
    name = _CAMEL.sub("_", text[begin:end])
    return [part.lower() for part in _NAME_PARTS.split(name) if part]


def _credential_kind(parts: list[str]) -> str | None:
    """``password``, ``api_key`` or None for the words of an assigned name."""
    if not parts:
        return None
    last = parts[-1]
    if last in _PASSWORD_NAMES or (last.endswith("password") and last[:-8].isalpha()):
        return "password"  # PGPASSWORD, MYSQLPASSWORD: a prefix glued to the name
    if last in _KEY_NAMES:
        return "api_key"
    if len(parts) >= 2 and (last == "token" or (last == "key" and parts[-2] in _KEY_QUALIFIERS)):
        return "api_key"
    return None


def _accept_assignment(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    kind = _credential_kind(_name_parts(text, m.start("kw"), m.end("kw")))
    if kind is None:
        return
    if m.group("nl"):  # the value on the next line: alone on it, and no common word
        word = m.group("v").lower().strip(_PROSE_PUNCTUATION)
        alone = _ALONE.match(text, m.end("v")) is not None  # not "Go to settings"
        if not alone or not word or word in _EN_STOPWORDS or m.group("v")[-1] in ":：":
            return
    start, end, quoted = _value_span(text, m.start("v"), m.end("v"))
    if not quoted and m.group("sep")[:1] in "\"'":  # "apiKey": 12345678}: a literal ends at ,}]
        end = start + len(text[start:end].rstrip(",}]"))
    value = text[start:end]
    if kind == "password":
        # PWD=/home/me is the shell's working directory, not a password.
        if not value or (m.group("kw").lower() == "pwd" and value.startswith(("/", "~"))):
            return
    else:
        # An env line (GITHUB_TOKEN=..., APP_SECRET=...) names a secret for sure: 6 will do.
        env = m.group("sep") == "=" and text[m.start("kw") : m.end("kw")].isupper()
        if len(value) < (6 if env else 8) or any(c.isspace() for c in value):
            return
        # "API_KEY: abcdefgh" in prose may be a word; a key has digits, capitals or symbols.
        if not quoted and "=" not in m.group("sep") and value.isalpha() and value.islower():
            return
    finds.append((start, end, kind))


# (With no value on its line, the value may stand alone on the next one: "password:\n  X".)
_ASSIGNMENT = _word_rule(
    ("key", "secret", "token", "credential", "pass", "pwd"),
    r"(?P<kw>key|secret|token|credentials?|pass(?:word|wd|code|phrase)|pwd)"
    r"(?P<sep>[\"'`]?[ \t]*(?:=>|:=|[=:：])|[ \t]+is[ \t]*:)[ \t]*(?P<nl>\r?\n[ \t]*)?" + _VALUE,
    _accept_assignment,
)
_ALONE = re.compile(r"[ \t]*(?:\r?\n|\Z)")

# Common words after "my password is" that make it prose, not a password.
_EN_STOPWORD_LIST = """
    a an the not too very so also still now being been just only really same different
    correct incorrect wrong invalid valid expired required optional case-sensitive weak strong
    long short secure insecure safe unsafe simple easy hard complex complicated empty blank
    missing set saved stored changed reset updated encrypted hashed hidden protected known
    unknown in on at for from with of to by written somewhere something nothing what that
    this which my your his her our their its about
"""
_EN_STOPWORDS = frozenset(_EN_STOPWORD_LIST.split())
_PROSE_PUNCTUATION = ".,;:!?()«»\"'…-—“”„"
# The possessive before a weak marker, up to three words away ("my old gmail password is").
# (A word here never starts with "[": a redaction marker must not make a marker.)
_POSSESSIVE_EN = re.compile(r"(?i:\b(?:my|our|your)[ \t]+(?:[^\s\[]\S*[ \t]+){0,3})$")
_POSSESSIVE_RU = re.compile(r"(?i:\b(?:мой|наш|твой|ваш)[ \t]+(?:[^\s\[]\S*[ \t]+)?)$")


def _word_start(text: str, start: int) -> bool:
    """No letter, digit or underscore right before ``start``: ``\\b``, checked after the scan.

    (A leading ``\\b`` in a pattern would stop the engine from skipping ahead to the
    pattern's first letter, and make every scan several times slower.)
    """
    return start == 0 or not (
        text[start - 1].isalnum() or text[start - 1] == "_" or marker_before(text, start)
    )


def _accept_weak_en(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    keyword = m.start("kw")
    if not _word_start(text, keyword):
        return
    if m.group("kw").lower() != "passcode" and not _POSSESSIVE_EN.search(
        text, max(0, keyword - 48), keyword
    ):
        return  # "the password is required": only "my/our/your ... password is" marks one
    start, end, quoted = _value_span(text, m.start("v"), m.end("v"))
    value = text[start:end]
    if not quoted:  # not quoted: a common word after "is" is prose, not a password
        if value.lower().strip(_PROSE_PUNCTUATION) in _EN_STOPWORDS:
            return
        if m.group("kw").lower().startswith("pin") and not any(c.isdigit() for c in value):
            return
    if value:
        finds.append((start, end, "password"))


# "my ... password is X", "your passcode was X", "my PIN is 4821", "passcode is X".
_WEAK_EN = _word_rule(
    ("pass", "pin"),
    r"(?P<kw>pass(?:word|code|phrase)|pin(?:[ \t]+code)?)"
    r"(?:[ \t]+(?:for|to|on|at|of|in)[ \t]+[^\s\[]\S*)?[ \t]+(?:is|was)[ \t]+" + _BARE_VALUE,
    _accept_weak_en,
)


def _accept_strong(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    if _word_start(text, m.start()):
        _add_value(finds, text, m.start("v"), m.end("v"), "password")


# Russian "пароль", Uzbek "parol"/"parolim" (Latin and Cyrillic script) with a separator.
_STRONG_RU_UZ = _word_rule(
    ("парол", "parol"),
    r"(?:парол(?:ь|им)?|parol(?:im|i)?)(?:[ \t]+от[ \t]+[^\s\[]\S*)?"
    r"(?:[ \t]*(?:[:=：—–]|-(?=[ \t]))|[ \t]+это)[ \t]*" + _VALUE,
    _accept_strong,
)


def _accept_zh(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    _add_value(finds, text, m.start("v"), m.end("v"), "password")  # Chinese has no spaces


# Chinese "密码是 / 密码为 / 密码：": the value is the quoted string or the run of ASCII after it.
_STRONG_ZH = _word_rule(
    ("密码",),
    r"密码(?:是|为|：|:|=)[ \t\u3000]*(?P<v>“[^”\n]*”|「[^」\n]*」|\"[^\"\n]*\"|[!-~]+)",
    _accept_zh,
)


def _accept_weak_ru(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    if not _word_start(text, m.start()) or not _POSSESSIVE_RU.search(
        text, max(0, m.start() - 32), m.start()
    ):
        return
    start, end, quoted = _value_span(text, m.start("v"), m.end("v"))
    value = text[start:end]
    # "мой пароль украли" is prose; "мой пароль qwerty123" is not: passwords are rarely Cyrillic.
    if value and (
        quoted
        or any(
            not ("а" <= c <= "я" or c == "ё") and c not in _PROSE_PUNCTUATION for c in value.lower()
        )
    ):
        finds.append((start, end, "password"))


# "мой пароль X", "мой новый пароль от почты X" (with a separator it is a strong marker).
_WEAK_RU = _word_rule(
    ("пароль",),
    r"пароль(?:[ \t]+от[ \t]+[^\s\[]\S*)?[ \t]+" + _BARE_VALUE,
    _accept_weak_ru,
)


def _accept_weak_uz(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    if not _word_start(text, m.start()):
        return
    start, end, quoted = _value_span(text, m.start("v"), m.end("v"))
    value = text[start:end]
    # "parolim yodimda yo'q" is prose; a password has digits, symbols or mixed case.
    plain = value.strip(_PROSE_PUNCTUATION).replace("'", "").replace("ʻ", "").replace("’", "")
    prose = plain.isalpha() and (plain.islower() or plain.istitle())
    if value and (quoted or (plain and not prose)):
        finds.append((start, end, "password"))


# "(mening) parolim X", "parolim esa X" ("my password [is] X").
_WEAK_UZ = _word_rule(
    ("parolim", "паролим"),
    r"(?:parolim|паролим)[ \t]+(?:esa[ \t]+)?" + _BARE_VALUE,
    _accept_weak_uz,
)


def _accept_bearer(finds: list[_Find], text: str, m: re.Match[str]) -> None:
    token = text[m.start("v") : m.end("v")]
    if _word_start(text, m.start()) and random_looking(token):
        finds.append((m.start("v"), m.end("v"), "token"))


_BEARER = _word_rule(
    ("bearer",),
    r"bearer[ \t]+(?P<v>[a-z0-9._~+/=-]{8,})",
    _accept_bearer,
)

_WORD_RULES = (_ASSIGNMENT, _WEAK_EN, _STRONG_RU_UZ, _STRONG_ZH, _WEAK_RU, _WEAK_UZ, _BEARER)
