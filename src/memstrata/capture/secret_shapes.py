"""Secrets recognised by their shape (the ``capture.secrets`` redactor's first half).

See ``capture/secrets.py`` for the redactor's invariants. Boundary checks count
a ``[REDACTED:kind]`` marker as a letter, so a second pass never completes a
match the first pass did not make. The shapes, by kind:

* ``private_key``: a PEM block ``-----BEGIN ... PRIVATE KEY-----`` up to its
  ``-----END ... PRIVATE KEY-----`` line (RSA, EC, OPENSSH, ENCRYPTED, PGP
  ``... PRIVATE KEY BLOCK``); a BEGIN line with no END redacts to the end of
  the text.
* ``api_key``: keys with a well-known prefix: OpenAI and Anthropic ``sk-...``
  (``sk-proj-``, ``sk-ant-``), GitHub ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``,
  GitLab ``glpat-``, AWS access key ids ``AKIA``/``ASIA`` + 16, Google ``AIza``
  + 35, Slack ``xoxa- xoxb- xoxp- xoxr-``, Stripe ``sk_live_ rk_live_ sk_test_
  rk_test_``, Hugging Face ``hf_``.
* ``token``: JSON Web Tokens ``eyJ....eyJ....sig``.
* ``card``: a 13-19 digit number, bare or in groups split by single spaces or
  dashes (first group of 4, the others of 3-6 digits), that passes the Luhn
  check and has the prefix and length of a card network (Visa, Mastercard,
  American Express, Discover, Diners, JCB, UnionPay, Maestro, Mir, RuPay, Troy,
  Uzcard, Humo): an IMEI (15 digits, 35/86/49...), an ISBN, a millisecond
  timestamp or a snowflake id has none. A number labelled as something else
  right before it ("IMEI:", "order #", "ISBN", "tracking number", "заказ",
  "buyurtma raqami", "订单号" ...) is no card either, so a real card written
  right after such a label is missed; so is a card written with other
  groupings or in non-ASCII digits. A random number with a network's prefix
  and length passes Luhn about one time in ten.
* ``connection_string``: the password of a URL with credentials,
  ``scheme://user:password@host``; scheme, user and host are kept.
* ``password`` on a command line: ``mysql``/``mariadb`` (and their tools)
  ``-pX`` (a lone ``-p`` asks for it), ``curl -u user:X``/``--user user:X``;
  a shell variable (``-p"$PASS"``) is no password.
"""

from __future__ import annotations

import re

__all__ = [
    "ASCII_ALNUM",
    "DIGITS",
    "JWT",
    "NOT_DIGITS",
    "PEM",
    "PREFIXED",
    "URL_PASSWORD",
    "cards",
    "command_passwords",
    "marker_before",
    "prefixed_ok",
    "random_looking",
]

_MARKER_TAIL = re.compile(r"\[REDACTED:[a-z_]+\]$")
ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _left_boundary(text: str, start: int) -> bool:
    """No ASCII letter or digit right before ``start`` (a shape must not start mid-word)."""
    return start == 0 or (text[start - 1] not in ASCII_ALNUM and not marker_before(text, start))


def marker_before(text: str, position: int) -> bool:
    """A ``[REDACTED:kind]`` marker ends right before ``position``.

    Every boundary check counts a marker as a letter: what stood there may have been
    one, and a second pass must not find a secret the first pass did not.
    """
    return (
        position > 0
        and text[position - 1] == "]"
        and _MARKER_TAIL.search(text, max(0, position - 40), position) is not None
    )


PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)

# Each alternative starts with a literal, so the engine skips ahead to candidate characters.
PREFIXED = re.compile(
    r"sk-[A-Za-z0-9_-]{20,}"
    r"|sk_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|rk_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|AKIA[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|ASIA[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|hf_[A-Za-z0-9]{30,}"
)

# Starts only where a base64url run starts (the look-behind after the "e"), so that a long
# run of "eyJeyJ..." is read once, not once per "eyJ" in it.
JWT = re.compile(
    r"e(?<![A-Za-z0-9_-]e)yJ[A-Za-z0-9_-]{4,}+\.eyJ[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+"
)

# The user part may be empty (redis://:password@host); the password runs to the last @
# before a slash or a space, so an @ inside it does not leak its tail.
URL_PASSWORD = re.compile(r"://[^\s:/?#@\[\]]*:(?P<v>[^\s/]+)@")

# A run of 13 or more ASCII digits, single spaces or dashes allowed between them, that
# does not start inside a word or number. (The look-behind after the first digit keeps
# the engine's skip-ahead to digits; possessive repeats stop it from retrying shorter
# runs inside a long number.)
DIGITS = re.compile(r"[0-9](?<![A-Za-z0-9][0-9])(?:[ -]?+[0-9]){12,}+")
_GROUPS = re.compile(r"[ -]")
NOT_DIGITS = bytes(byte for byte in range(256) if not 0x30 <= byte <= 0x39)


def random_looking(key: str) -> bool:
    """Has a digit, or both cases: what a generated key has and a word or identifier lacks."""
    return any(c.isdigit() for c in key) or (not key.islower() and not key.isupper())


def prefixed_ok(text: str, m: re.Match[str]) -> bool:
    if not _left_boundary(text, m.start()):
        return False
    key = m.group()
    # "sk-" and "hf_" also begin ordinary words and identifiers ("sk-learn-compatible-...").
    return not key.startswith(("sk-", "hf_")) or random_looking(key[3:])


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _network(digits: str) -> bool:
    """The prefix and length of a card network (an IMEI, an ISBN or a timestamp has none)."""
    length, two, four = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return length in (13, 16, 19)  # Visa
    if two in (34, 37):
        return length == 15  # American Express
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return length == 16  # Mastercard
    if two == 50 or 56 <= two <= 58 or four in (6304, 6759, 6761, 6762, 6763):
        return True  # Maestro: any length
    if 300 <= int(digits[:3]) <= 305 or two in (36, 38, 39) or four == 3095:
        return length >= 14  # Diners Club
    # Mir, JCB, Discover / UnionPay / RuPay / Troy (6), RuPay (81, 82), Uzcard, Humo, Troy
    return length >= 16 and (
        2200 <= four <= 2204
        or 3528 <= four <= 3589
        or digits[0] == "6"
        or two in (81, 82)
        or four in (8600, 9860, 9792)
    )


def _is_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _network(digits) and _luhn(digits)


# A number labelled as something else is not a card: "IMEI: ...", "order #...", "ISBN ...".
_NOT_A_CARD = re.compile(
    r"(?<![a-zа-яё])(?:imei\w*|imsi|iccid|meid|serial|s/n|isbn\S*|issn|ean|upc|gtin|barcode|"
    r"track(?:ing)?|orders?|invoice|ticket|booking|заказ\w*|трек\w*|накладн\w*|посылк\w*|"
    r"штрих\w*|инн|снилс|паспорт\w*|buyurtma\w*|kuzatuv|trek|jshshir|pinfl|stir|"
    r"订单|单号|运单|串号|快递|物流|条码|身份证)"
    r"(?:[\s:：#№=.\-—]|number|num|no|id|code|is|was|номер|raqami?|是|为|号码?|码)*\Z"
)
_LABEL_WINDOW = 40


def _labelled(text: str, start: int) -> bool:
    window = text[max(0, start - _LABEL_WINDOW) : start].lower()
    return _NOT_A_CARD.search(window) is not None


def cards(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The card numbers in the digit run ``text[start:end]``.

    A card is one group of 13-19 digits, or consecutive groups (the first of 4 digits,
    the others of 3-6) holding 13-19 digits, that passes Luhn; the longest one wins, so a
    card among other numbers ("#1 4111 1111 1111 1111 123") is still found. A run that
    continues a decimal number, or a card glued to a following letter, is no card.
    """
    if marker_before(text, start) or _labelled(text, start):
        return []
    if (
        start >= 2
        and text[start - 1] in ".,"
        and (text[start - 2].isdigit() or marker_before(text, start - 1))
    ):
        return []
    groups: list[tuple[int, int]] = []
    position = start
    for group in _GROUPS.split(text[start:end]):
        groups.append((position, position + len(group)))
        position += len(group) + 1
    cards: list[tuple[int, int]] = []
    index = 0
    while index < len(groups):
        first_start, first_end = groups[index]
        last: int | None = None
        if 13 <= first_end - first_start <= 19:
            last = index if _is_card(text[first_start:first_end]) else None
        elif first_end - first_start == 4:
            digits = text[first_start:first_end]
            for later in range(index + 1, len(groups)):
                group_start, group_end = groups[later]
                digits += text[group_start:group_end]
                if not 3 <= group_end - group_start <= 6 or len(digits) > 19:
                    break
                if _is_card(digits):
                    last = later
        card_end = groups[last][1] if last is not None else 0
        if last is None or (card_end < len(text) and text[card_end] in ASCII_ALNUM):
            index += 1
            continue
        cards.append((first_start, card_end))
        index = last + 1
    return cards


# mysql -pS3cret, mysqldump -p'S3cret': the password glued to -p (a lone -p prompts for it).
_GLUED_P = re.compile(r"(?<![^ \t])-p(?P<v>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'-]\S*)")
# curl -u admin:S3cret, curl --user 'admin:S3cret'
_CURL_USER = re.compile(
    r"(?<![^ \t])(?:-u[ \t]*|--user(?:[ \t]+|=))[\"']?[^\s:\"'$]*:(?P<v>[^\s\"']+)"
)
_MYSQL = re.compile(r"\b(?:mysql|mariadb)[a-z-]*(?![^ \t])", re.IGNORECASE)
_CURL = re.compile(r"\bcurl(?![^ \t])", re.IGNORECASE)
_COMMAND_WINDOW = 300


def command_passwords(text: str) -> list[tuple[int, int]]:
    """(start, end) of each password given on a mysql/mariadb or curl command line.

    The option must follow its command on the same line; a value that is a shell
    variable (``-p"$DB_PASS"``, ``-u $USER:$PASS``) is no password.
    """
    found: list[tuple[int, int]] = []
    for pattern, command in ((_GLUED_P, _MYSQL), (_CURL_USER, _CURL)):
        for m in pattern.finditer(text):
            value = m.group("v").strip("\"'")
            line = text.rfind("\n", 0, m.start()) + 1
            begin = max(line, m.start() - _COMMAND_WINDOW)
            if value and value[0] != "$" and command.search(text, begin, m.start()):
                found.append((m.start("v"), m.end("v")))
    return found
