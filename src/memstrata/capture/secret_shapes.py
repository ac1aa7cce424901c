"""Secrets recognised by their shape (the ``capture.secrets`` redactor's first half).

PEM private keys, API keys with a well-known prefix, JSON Web Tokens, URL
passwords and Luhn-valid card numbers: see ``capture/secrets.py`` for what
each kind covers and the redactor's invariants. Boundary checks count a
``[REDACTED:kind]`` marker as a letter, so a second pass never completes a
match the first pass did not make.
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


def _is_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn(digits)


def cards(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The card numbers in the digit run ``text[start:end]``.

    A card is one group of 13-19 digits, or consecutive groups (the first of 4 digits,
    the others of 3-6) holding 13-19 digits, that passes Luhn; the longest one wins, so a
    card among other numbers ("#1 4111 1111 1111 1111 123") is still found. A run that
    continues a decimal number, or a card glued to a following letter, is no card.
    """
    if marker_before(text, start):
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
