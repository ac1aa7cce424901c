"""Redaction over two corpora: ordinary text is never touched, every secret is always removed.

* ``tests/data/secrets/ordinary.txt``: sentences in English, Russian, Uzbek and
  Chinese full of numbers that are not secrets (phone numbers, IMEIs, order
  ids, ISBNs, tracking numbers, UUIDs, git SHAs, timestamps, prices, URLs with
  query strings, versions, JSON without credentials). ``redact`` changes none.
* the positive corpus below: every kind of secret, said every way the redactor
  documents (assignments, env lines, command lines, the value on the next line,
  JSON, a label before a JSON object): ``redact`` removes every one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstrata.capture.secrets import Redacted, contains_secret, redact

ORDINARY = Path(__file__).parent / "data" / "secrets" / "ordinary.txt"


def ordinary_lines() -> list[str]:
    return [line for line in ORDINARY.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_ordinary_corpus_is_large_and_multilingual() -> None:
    lines = ordinary_lines()
    assert len(lines) >= 200
    assert sum(any("а" <= c <= "я" for c in line.lower()) for line in lines) >= 40  # Russian
    assert sum("'" in line or "raqam" in line for line in lines) >= 20  # Uzbek
    assert sum(any("\u4e00" <= c <= "\u9fff" for c in line) for line in lines) >= 40  # Chinese


def test_no_ordinary_sentence_is_changed() -> None:
    changed = [(line, redact(line).text) for line in ordinary_lines() if redact(line).text != line]
    assert changed == []
    assert not [line for line in ordinary_lines() if contains_secret(line)]


def test_ordinary_sentences_joined_into_one_text_are_not_changed() -> None:
    text = "\n".join(ordinary_lines())
    assert redact(text) == Redacted(text, ())


def test_an_imei_is_not_a_card_but_a_card_is() -> None:
    text = "my phone's IMEI is 490154203237518"
    assert redact(text).text == text
    assert redact("my card is 4539 5787 6362 1486").kinds == ("card",)
    assert redact("order 12 paid with 4539578763621486").kinds == ("card",)


# --- every secret, every phrasing --------------------------------------------------------------

PEM_BODY = "MIIEowIBAAKCAQEA7v0bX3Yd9h1sQfzB8r2pQ8mZ"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
# (kind, the secret as written, the part of it that must not survive)
SECRET_VALUES = [
    ("password", "S3cret!xQ", "S3cret!xQ"),
    ("password", "hunter2", "hunter2"),
    ("password", "Kotik2020", "Kotik2020"),
    ("api_key", "sk-proj-Ab3dEf6hIj9kLmN0pQr2StU5vWx8Yz1_aB4cD7eF0gH3iJ6kL9mN", "Ab3dEf6hIj9kLmN0"),
    ("api_key", "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6", "aB3dE6gH9jK2mN5p"),
    ("api_key", "AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("api_key", "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp"),
    ("api_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjt"),
    ("api_key", "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "AbCdEfGhIjKlMnOp"),
    ("api_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("token", JWT, "SflKxwRJSMeKKF2QT4fw"),
    ("token", "ya29.a0AfH6SMBx3xyz", "a0AfH6SMBx3xyz"),
    ("card", "4539578763621486", "4539578763621486"),
]
# Phrasings of a value: {} is where the value goes.
PHRASINGS = [
    "password: {}",
    "password = {}",
    "my password is {}",
    "PGPASSWORD={} psql -h db -U app",
    "export FOO_PASSWORD={}",
    "MYSQL_PWD={} mysql -u root",
    "GITHUB_TOKEN={}",
    "export APP_SECRET={}",
    "mysql -u root -p{} shop",
    "mysqldump -h db -u root -p'{}' shop > dump.sql",
    "mysql --password={} -u root",
    "curl -u admin:{} https://api.example.com/v1",
    "curl --user 'admin:{}' https://api.example.com/v1",
    "password:\n{}",
    "Password:\n  {}\n\nthanks",
    'x_password: {{"password": "{}"}}',
    'token = {{"value": "{}", "kind": "x"}}',
    '{{"password": "{}"}}',
    '{{"apiKey": "{}", "debug": true}}',
    '{{"user": {{"name": "bob", "credentials": {{"secret": "{}"}}}}}}',
    'the tool said {{"access_token": "{}", "expires_in": 3600}} and stopped',
    "api_key={}",
    "Authorization: Bearer {}",
    "postgres://app:{}@db:5432/shop",
    "пароль: {}",
    "мой пароль {}",
    "parol: {}",
    "我的密码是{}，别外传",
]
CARD_PHRASINGS = [
    "my card is {}",
    "card number: {}",
    "номер карты {}",
    "karta raqamim {}",
    "卡号{}，谢谢",
    "pay with {} today",
    '{{"card": "{}", "exp": "12/26"}}',
]
CARDS = [
    "4539578763621486",
    "4539 5787 6362 1486",
    "5555-5555-5555-4444",
    "378282246310005",
    "3782 822463 10005",
    "6011111111111117",
    "3530111333300000",
    "30569309025904",
    "2200123456789019",
    "8600123456789012",
    "9860123456789015",
    "6200000000000005",
    "4222222222222",
]
PRIVATE_KEY_PHRASINGS = [
    "here is the key:\n{}\nthanks",
    "private_key: {}",
    '{{"private_key": {}}}',
    '{{"key": {}}}',
    "ssh key below\n{}",
]


# Phrasings whose documented rule wants a key-like value (8 characters or more; a Bearer
# token in the token68 alphabet) and the one whose value cannot hold a "/" (a URL password).
KEY_PHRASINGS = {"api_key={}", "Authorization: Bearer {}"}
URL_PHRASING = "postgres://app:{}@db:5432/shop"


def _applies(value: str, phrasing: str) -> bool:
    if phrasing in KEY_PHRASINGS:
        return len(value) >= 8 and "!" not in value
    return phrasing != URL_PHRASING or "/" not in value


def _positive() -> list[tuple[str, str]]:
    cases = [
        (phrasing.format(value), core)
        for _, value, core in SECRET_VALUES
        for phrasing in PHRASINGS
        if _applies(value, phrasing)
    ]
    cases += [(phrasing.format(card), card) for phrasing in CARD_PHRASINGS for card in CARDS]
    cases += [
        (phrasing.format(json.dumps(PEM) if phrasing.startswith("{") else PEM), PEM_BODY)
        for phrasing in PRIVATE_KEY_PHRASINGS
    ]
    # the same texts as an agent's tool would send them: inside a JSON string
    cases += [(json.dumps({"cmd": text}), core) for text, core in list(cases)]
    return cases


POSITIVE = _positive()


def test_the_positive_corpus_covers_every_kind_and_phrasing() -> None:
    assert len(POSITIVE) >= 2 * (len(SECRET_VALUES) * len(PHRASINGS) - 10)


@pytest.mark.parametrize(("text", "core"), POSITIVE)
def test_every_secret_said_every_way_is_redacted(text: str, core: str) -> None:
    result = redact(text)
    assert core not in result.text, result.text
    assert result.kinds
    assert redact(result.text) == Redacted(result.text, ())
    if text.startswith("{"):
        json.loads(result.text)  # JSON stays JSON


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PGPASSWORD=S3cret psql", "PGPASSWORD=[REDACTED:password] psql"),
        ("MYSQL_PWD=S3cret", "MYSQL_PWD=[REDACTED:password]"),
        ("mysql -u root -pS3cret shop", "mysql -u root -p[REDACTED:password] shop"),
        ("mysql -u root -p'S3 cret' shop", "mysql -u root -p'[REDACTED:password]' shop"),
        ("mysql --password=S3cret", "mysql --password=[REDACTED:password]"),
        ("curl -u admin:S3cret https://x", "curl -u admin:[REDACTED:password] https://x"),
        ("curl -uadmin:S3cret https://x", "curl -uadmin:[REDACTED:password] https://x"),
        ("password:\nS3cret\nnext line", "password:\n[REDACTED:password]\nnext line"),
        ('x_password: {"password": "S3cret"}', "x_password: [REDACTED:password]"),
    ],
)
def test_the_new_phrasings_keep_everything_but_the_secret(text: str, expected: str) -> None:
    assert redact(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "mysql -u root -p shop",  # -p alone: mysql asks for the password
        "mysql -u root -P 3306 -h db",  # -P is the port
        'mysql -u root -p"$DB_PASS" shop',  # a variable, not a password
        "grep -p pattern file",  # not mysql
        "curl -u admin https://x",  # no password given
        "curl -u $USER:$PASS https://x",
        "tar -u -f x.tar",
        "Password requirements:\n- at least 12 characters\n- one digit",
        "Change your password:\nGo to settings and press reset.",
        "password:\nrequired",
        "Enter the password:\n",
        "uname -p && ps -u root",
    ],
)
def test_look_alikes_of_the_new_phrasings_are_kept(text: str) -> None:
    assert redact(text) == Redacted(text, ())
