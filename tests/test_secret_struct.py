"""Secrets inside structured data: JSON texts, JSON inside text, mappings and lists.

A secret under a credential-named key or inside a string value is replaced;
the structure around it is kept (same keys, same nesting, a JSON string is
still a JSON string); data without secrets comes back unchanged.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory
from memstrata.capture.secrets import contains_secret, redact, redact_value

MARKER = "[REDACTED:"


def is_marker(value: object) -> bool:
    return isinstance(value, str) and value.startswith(MARKER) and value.endswith("]")


# --- JSON texts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"password": "Hunter2xQz9"}, "password"),
        ({"db": {"passwd": "Hunter2xQz9", "port": 5432}}, "password"),
        ({"apiKey": "Hunter2xQz9"}, "api_key"),
        ({"API-KEY": "Hunter2xQz9"}, "api_key"),
        ({"x_password": "Hunter2xQz9"}, "password"),
        ({"PGPASSWORD": "Hunter2xQz9"}, "password"),
        ({"client_secret": "Hunter2xQz9"}, "api_key"),
        ({"token": "Hunter2xQz9"}, "token"),
        ({"access_token": "Hunter2xQz9"}, "token"),
        ({"refreshToken": "Hunter2xQz9"}, "token"),
        ({"Authorization": "Basic Hunter2xQz9"}, "token"),
        ({"auth": {"user": "bob", "pass": "Hunter2xQz9"}}, "token"),
        ({"cookie": "sid=Hunter2xQz9"}, "token"),
        ({"session_token": "Hunter2xQz9"}, "token"),
        ({"private_key": "Hunter2xQz9"}, "private_key"),
        ({"aws_secret_access_key": "Hunter2xQz9"}, "api_key"),
        ({"pwd": 1234567890}, "password"),
        ({"pin": "x", "password": ["Hunter2xQz9", "again"]}, "password"),
    ],
)
def test_a_value_under_a_credential_key_is_replaced_whatever_its_shape(
    data: dict[str, Any], kind: str
) -> None:
    text = json.dumps({"name": "login", "arguments": data})
    result = redact(text)
    assert "Hunter2xQz9" not in result.text and "1234567890" not in result.text
    assert kind in result.kinds
    parsed = json.loads(result.text)  # still JSON, same keys
    assert parsed.keys() == {"name", "arguments"}
    assert _keys(parsed["arguments"]) == _keys(data) - _below_credentials(data)
    safe, kinds = redact_value(data)
    assert kind in kinds and "Hunter2xQz9" not in json.dumps(safe)
    assert safe.keys() == data.keys()


def _keys(data: Any) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for value in data.values() for k in _keys(value)}
    if isinstance(data, list):
        return {k for value in data for k in _keys(value)}
    return set()


def _below_credentials(data: dict[str, Any]) -> set[str]:
    """The keys inside the values that a credential key replaces whole."""
    return {
        k
        for key, value in data.items()
        if is_marker(redact_value({key: value})[0][key])
        for k in _keys(value)
    }


def test_a_json_string_inside_json_is_redacted_and_stays_a_json_string() -> None:
    inner = json.dumps({"user": "bob", "password": "Hunter2xQz9"})
    outer = json.dumps({"name": "login", "arguments": inner})
    result = redact(outer)
    assert "Hunter2xQz9" not in result.text and result.kinds == ("password",)
    arguments = json.loads(json.loads(result.text)["arguments"])
    assert arguments == {"user": "bob", "password": "[REDACTED:password]"}


def test_only_the_secret_changes_formatting_and_order_are_kept() -> None:
    text = '{\n  "b": 1,\n  "password":"Hunter2xQz9" ,\n  "a": [1, 2.50, "x"]\n}'
    assert redact(text).text == text.replace('"Hunter2xQz9"', '"[REDACTED:password]"')


@pytest.mark.parametrize(
    "text",
    [
        '{"max_tokens": 4096, "temperature": 0.2, "token_count": 12}',
        '{"primary_key": "customer_id", "key": "name", "keyboard": "us"}',
        '{"password_required": true, "password_min_length": 12}',
        '{"auth": false, "password": null, "token": "", "secret": true}',
        '{"pwd": "/home/bob/project", "PWD": "~/src"}',
        '{"token_type": "bearer", "tokens": ["a", "b"], "expires_in": 3600}',
        '[{"id": 1, "title": "x"}, {"id": 2, "url": "https://example.com/?q=1&page=2"}]',
        '{"password": "[REDACTED:password]"}',
        "not json { but braces",
        '{"unterminated": "value',
    ],
)
def test_json_without_secrets_comes_back_unchanged(text: str) -> None:
    assert redact(text).text == text
    assert redact(text).kinds == ()
    assert not contains_secret(text)


@pytest.mark.parametrize("number", [4111111111111111, "4111 1111 1111 1111"])
def test_a_card_anywhere_in_json_is_replaced(number: object) -> None:
    text = json.dumps({"items": [{"note": "pay", "n": number}]})
    result = redact(text)
    assert "4111" not in result.text and result.kinds == ("card",)
    assert json.loads(result.text)["items"][0]["n"] == "[REDACTED:card]"


def test_json_inside_prose_is_redacted_and_the_prose_kept() -> None:
    text = 'The tool sent {"apiKey": 12345678, "region": "eu"} and then stopped.'
    result = redact(text)
    assert result.text == (
        'The tool sent {"apiKey": "[REDACTED:api_key]", "region": "eu"} and then stopped.'
    )
    assert contains_secret(text)


def test_json_lines_are_each_redacted() -> None:
    lines = [json.dumps({"n": n, "token": f"Tok{n}en-Xy9{n}"}) for n in range(3)]
    result = redact("\n".join(lines) + "\n")
    assert result.kinds == ("token",) * 3
    for line in result.text.splitlines():
        assert json.loads(line)["token"] == "[REDACTED:token]"


def test_a_credential_label_before_a_json_object_redacts_the_object() -> None:
    result = redact('x_password: {"password": "Hunter2xQz9", "hint": "cat"}')
    assert result.text == "x_password: [REDACTED:password]"
    assert redact('token = ["a1", "b2"]').text == "token = [REDACTED:token]"


def test_a_duplicate_key_does_not_hide_a_secret() -> None:
    text = '{"a": {"note": "password: x1", "note": "ok"}, "b": {"token": 1, "token": 2}}'
    result = redact(text)
    assert result.text == (
        '{"a": {"note": "password: [REDACTED:password]", "note": "ok"}, '
        '"b": {"token": "[REDACTED:token]", "token": "[REDACTED:token]"}}'
    )


def test_json_text_redaction_is_idempotent() -> None:
    text = json.dumps({"a": json.dumps({"password": "Hunter2xQz9"}), "b": "api_key=abcd1234efgh"})
    once = redact(text)
    assert redact(once.text).text == once.text and redact(once.text).kinds == ()


def test_python_values_keep_their_shape() -> None:
    value = {
        "name": "login",
        "arguments": json.dumps({"password": "Hunter2xQz9"}),
        "list": ("a", {"token": 5}),
        "n": 3,
        "ok": True,
        "none": None,
    }
    safe, kinds = redact_value(value)
    assert kinds == ("password", "token")
    assert safe == {
        "name": "login",
        "arguments": '{"password": "[REDACTED:password]"}',
        "list": ["a", {"token": "[REDACTED:token]"}],
        "n": 3,
        "ok": True,
        "none": None,
    }
    assert redact_value({"a": [1, "b", {"c": None}]}) == ({"a": [1, "b", {"c": None}]}, ())


# --- properties ---------------------------------------------------------------------------------

CREDENTIAL_KEYS = [
    "password",
    "Password",
    "passwd",
    "pwd",
    "secret",
    "client_secret",
    "clientSecret",
    "token",
    "access_token",
    "refresh_token",
    "api_key",
    "apiKey",
    "API-KEY",
    "apikey",
    "authorization",
    "Authorization",
    "auth",
    "cookie",
    "session_token",
    "sessionToken",
    "private_key",
    "x_password",
    "DB_PASSWORD",
]
ORDINARY_KEYS = ["name", "id", "city", "items", "query", "limit", "note", "data", "max_tokens"]
SECRET_TAIL = st.text(alphabet=string.ascii_letters + string.digits, min_size=8, max_size=16)
# A planted secret: a distinctive prefix (so that its bytes cannot occur by chance) + random tail.
SECRETS = SECRET_TAIL.map(lambda tail: "Zq9" + tail)
PHRASINGS = [
    "password: {}",
    "my password is {}",
    "api_key={}",
    "Authorization: Bearer {}",
    "PGPASSWORD={} psql -h db",
    "mysql -u root -p{} shop",
    "curl -u admin:{} https://example.com",
    "password:\n{}\n",
    "postgres://bob:{}@db:5432/x",
    "пароль: {}",
    "我的密码是{}，别外传",
]
plain_words = st.text(alphabet=string.ascii_lowercase + " ", max_size=20)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), plain_words, st.floats(-1, 1, width=32)
)


@st.composite
def planted(draw: st.DrawFn) -> tuple[Any, list[str]]:
    """A nested JSON value with secrets planted at random depths; and the secrets."""
    secrets: list[str] = []

    def secret_value() -> Any:
        secret = draw(SECRETS)
        secrets.append(secret)
        shape = draw(st.sampled_from(["string", "nested", "list", "number", "phrase"]))
        if shape == "nested":
            return {draw(st.sampled_from(ORDINARY_KEYS)): secret}
        if shape == "list":
            return [secret, "x"]
        if shape == "number":
            digits = str(draw(st.integers(10**9, 10**12)))
            secrets[-1] = digits
            return int(digits)
        if shape == "phrase":
            return draw(st.sampled_from(PHRASINGS)).format(secret)
        return secret

    def node(depth: int) -> Any:
        choice = draw(st.integers(0, 5 if depth < 4 else 1))
        if choice == 0:
            return draw(scalars)
        if choice == 1:  # a secret inside a string value, said some way
            secret = draw(SECRETS)
            secrets.append(secret)
            return draw(st.sampled_from(PHRASINGS)).format(secret)
        if choice in (2, 3):
            keys = draw(st.lists(st.sampled_from(ORDINARY_KEYS), max_size=3, unique=True))
            out: dict[str, Any] = {key: node(depth + 1) for key in keys}
            if draw(st.booleans()):
                out[draw(st.sampled_from(CREDENTIAL_KEYS))] = secret_value()
            return out
        if choice == 4:
            return [node(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        inner = node(depth + 1)  # JSON inside a string of the data
        return json.dumps(inner if isinstance(inner, (dict, list)) else [inner])

    return node(0), secrets


def same_shape(before: Any, after: Any) -> None:
    """``after`` is ``before`` with secrets replaced: same keys, nesting and JSON strings."""
    if isinstance(before, dict):
        assert isinstance(after, dict) and after.keys() == before.keys()
        for key, value in before.items():
            if key in CREDENTIAL_KEYS and redact_value({key: value})[1]:
                assert is_marker(after[key]), (key, after[key])
            else:
                same_shape(value, after[key])
    elif isinstance(before, list):
        assert isinstance(after, list) and len(after) == len(before)
        for one, other in zip(before, after, strict=True):
            same_shape(one, other)
    elif isinstance(before, str):
        assert isinstance(after, str)
        if before.lstrip().startswith(("{", "[")):
            same_shape(json.loads(before), json.loads(after))
    else:
        assert after == before or (isinstance(after, str) and MARKER in after)


@settings(
    max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(planted(), st.sampled_from([None, 2]))
def test_planted_secrets_vanish_and_the_shape_stays(
    case: tuple[Any, list[str]], indent: int | None
) -> None:
    value, secrets = case
    safe, kinds = redact_value(value)
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    safe_text = redact(text)
    for secret in secrets:
        assert secret not in json.dumps(safe, ensure_ascii=False), (secret, safe)
        assert secret not in safe_text.text, (secret, safe_text.text)
    same_shape(value, safe)
    same_shape(value, json.loads(safe_text.text))
    assert bool(kinds) == bool(secrets) == bool(safe_text.kinds)
    assert redact_value(safe) == (safe, ())
    assert redact(safe_text.text).text == safe_text.text


@st.composite
def secret_free(draw: st.DrawFn, depth: int = 0) -> Any:
    choice = draw(st.integers(0, 3 if depth < 4 else 0))
    if choice == 0:
        return draw(scalars)
    if choice == 1:
        keys = draw(st.lists(st.sampled_from(ORDINARY_KEYS), max_size=4, unique=True))
        return {key: draw(secret_free(depth + 1)) for key in keys}
    if choice == 2:
        return draw(st.lists(secret_free(depth + 1), max_size=3))
    return json.dumps([draw(secret_free(depth + 1))])


@settings(
    max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(secret_free(), st.sampled_from([None, 1]))
def test_data_without_secrets_comes_back_unchanged(value: Any, indent: int | None) -> None:
    assert redact_value(value) == (value, ())
    text = json.dumps(value, indent=indent)
    assert redact(text).text == text


# --- every channel of record_turn ---------------------------------------------------------------

ARGS_SECRET = "Hunter2xQz9"
DICT_SECRET = "Dict5ecretQ7"
RESULT_SECRET = "Resu1tT0kenX"
STRUCT_SECRET = "Struct8PassW"
REASONING_SECRET = "Reas0nPwdK3y"
META_SECRET = "MetaCook1eZ9"
TEXT_SECRET = "Us3rBlobPwd4"
NESTED_SECRET = "N3stedJs0nS5"


def _workspace_bytes(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file()
    }


def test_secrets_in_every_channel_of_a_turn_reach_no_file(ws: Path) -> None:
    secrets = [
        ARGS_SECRET,
        DICT_SECRET,
        RESULT_SECRET,
        STRUCT_SECRET,
        REASONING_SECRET,
        META_SECRET,
        TEXT_SECRET,
        NESTED_SECRET,
    ]
    with Memory.open(ws) as memory:
        turn = memory.record_turn(
            "s",
            user=f'here is the config: {{"db": {{"password": "{TEXT_SECRET}"}}}} thanks',
            assistant="done",
            reasoning=f'calling login with {{"apiKey": "{REASONING_SECRET}"}}',
            tool_calls=[
                {"name": "login", "arguments": json.dumps({"password": ARGS_SECRET})},
                {"name": "connect", "arguments": {"auth": {"token": DICT_SECRET}, "port": 1}},
                {
                    "name": "run",
                    "arguments": json.dumps(
                        {"env": json.dumps({"DB_PASSWORD": NESTED_SECRET}), "cmd": "ls"}
                    ),
                },
            ],
            tool_results=[
                {"content": json.dumps({"ok": True, "access_token": RESULT_SECRET})},
                {"content": {"session": {"secret": STRUCT_SECRET}, "rows": [1, 2]}},
                {"content": "done"},
            ],
            meta={"headers": {"Cookie": f"sid={META_SECRET}"}},
        )
        calls = [part for message in turn.messages for part in message["parts"]]
        arguments = [part["arguments"] for part in calls if part["type"] == "tool_call"]
        assert json.loads(arguments[0]) == {"password": "[REDACTED:password]"}
        assert arguments[1] == {"auth": "[REDACTED:token]", "port": 1}
        assert json.loads(json.loads(arguments[2])["env"]) == {"DB_PASSWORD": "[REDACTED:password]"}
        memory.search("login config password")
        memory.reindex(full=True)
        memory.search("config")
    files = _workspace_bytes(ws)
    assert any(name.endswith("index.sqlite") for name in files)
    leaks = [(name, s) for name, data in files.items() for s in secrets if s.encode() in data]
    assert leaks == []


# Tool-call arguments as agents send them (JSON strings and mappings), each with a secret.
ARGUMENT_SHAPES = [
    {"password": "{}"},
    {"user": "bob", "password": "{}"},
    {"apiKey": "{}", "debug": True},
    {"api_key": "{}", "n": 42},
    {"headers": {"Authorization": "Bearer {}"}},
    {"cmd": "mysql -u root -p{} shop"},
    {"cmd": "PGPASSWORD={} psql -h db"},
    {"cmd": "curl -u admin:{} https://x.example"},
    {"env": {"GITHUB_TOKEN": "{}"}},
    {"config": {"db": {"passwd": "{}", "port": 5432}}},
    {"text": 'note: {{"secret": "{}"}}'},
    {"text": "my password is {}"},
    {"url": "postgres://bob:{}@db/x"},
    {"query": "password:\n{}"},
    {"list": [{"token": "{}"}, {"token": "{}"}]},
    {"token": 1234567890, "secret": "{}"},
    {"nested": '{{"access_token": "{}"}}'},
    {"a": "x\\", "password": 'he said "{}"'},
    {"password": "{}", "z": "}}"},
    {"pin": 7, "client_secret": "{}", "q": "[1, 2]"},
    {"apiKey": 12345678},
    {"password": "{}\\"},
]


def _fill(shape: Any, secret: str) -> Any:
    if isinstance(shape, dict):
        return {key: _fill(value, secret) for key, value in shape.items()}
    if isinstance(shape, list):
        return [_fill(value, secret) for value in shape]
    return shape.format(secret) if isinstance(shape, str) else shape


def test_no_turn_is_refused_because_its_arguments_held_a_secret(ws: Path) -> None:
    secret = "Zq9Hunter2xQz9"
    with Memory.open(ws) as memory:
        for index, shape in enumerate(ARGUMENT_SHAPES):
            arguments = _fill(shape, secret)
            for sent in (arguments, json.dumps(arguments)):
                turn = memory.record_turn(
                    "s",
                    user="go",
                    assistant="ok",
                    tool_calls=[{"name": f"tool{index}", "arguments": sent}],
                    tool_results=[{"content": json.dumps(arguments)}],
                )
                parts = [part for message in turn.messages for part in message["parts"]]
                call = next(part for part in parts if part["type"] == "tool_call")
                assert type(call["arguments"]) is type(sent)
                if isinstance(sent, str):
                    json.loads(call["arguments"])  # still JSON
        assert len(memory.sessions.turns("s")) == 2 * len(ARGUMENT_SHAPES)
    leaks = [name for name, data in _workspace_bytes(ws).items() if secret.encode() in data]
    assert leaks == []
    assert b"12345678" not in _workspace_bytes(ws)["sessions/s.jsonl"]


def test_lessons_and_observations_redact_json(ws: Path) -> None:
    with Memory.open(ws) as memory:
        memory.record_tool_failure(
            "login", json.dumps({"user": "bob", "password": "Hunter2xQz9"}), "401 Unauthorized"
        )
        memory.record_tool_failure("deploy", {"token": 12345678901}, "boom")
        memory.observe('Remember that the staging config is {"api_key": "Zq9abcdefgh"}.')
        memory.remember('the deploy settings are {"client_secret": "Zq9ijklmnop", "region": "eu"}')
        lessons = " ".join(lesson.text for lesson in memory.lessons.list())
        assert "[REDACTED:password]" in lessons and "[REDACTED:token]" in lessons
    data = b"".join(_workspace_bytes(ws).values())
    for secret in (b"Hunter2xQz9", b"12345678901", b"Zq9abcdefgh", b"Zq9ijklmnop"):
        assert secret not in data


# --- the fast paths agree with the full walk ------------------------------------------------------

PIECES = [
    "password",
    "Password: ",
    ": ",
    "=",
    " ",
    "\n",
    "4111111111111111",
    "4111 1111 1111 1111",
    "sk-proj-Ab3dEf6hIj9kLmN0pQr2StU5vWx8Yz1",
    "https://bob:hunter2@db.example/x",
    "https://example.com/a?q=1",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    "max_tokens",
    "mysql -u root -p",
    "curl -u a:",
    "Xy7pq2Lm",
    "my password is ",
    "[REDACTED:card]",
    '"',
    "{",
    "[",
    "\\",
    "пароль ",
    "密码是",
    "\u0130",
    "\u212aey=",
    "1,",
    "GITHUB_TOKEN=",
    "мой пароль Xy7pq2Lm",
    "密码是Xy7pq2Lm",
]
piece_strings = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
json_like = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from([0, 5, -3, 4111111111111111, 12345678901234, 4111111111111112]),
        st.floats(allow_nan=False, allow_infinity=False),
        piece_strings,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(ORDINARY_KEYS + CREDENTIAL_KEYS) | piece_strings, children, max_size=4
        ),
        children.map(lambda value: json.dumps([value])),
    ),
    max_leaves=12,
)


def assert_fast_is_full(texts: list[str], value: Any) -> None:
    """``redact`` and ``redact_value`` give what they give with their shortcuts (texts
    and strings that cannot hold a secret are skipped) turned off."""
    from memstrata.capture import secret_struct

    fast = [redact(text) for text in texts] + [redact_value(value)]
    saved = secret_struct._clean, secret_struct.quiet
    try:
        secret_struct._clean = lambda text, rules: False  # type: ignore[assignment]
        secret_struct.quiet = lambda text: False  # type: ignore[assignment]
        slow = [redact(text) for text in texts] + [redact_value(value)]
    finally:
        secret_struct._clean, secret_struct.quiet = saved
    assert fast == slow


@settings(
    max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(json_like, st.sampled_from([None, 1]), st.booleans(), st.booleans(), piece_strings)
def test_the_fast_paths_agree_with_the_full_walk(
    value: Any, indent: int | None, compact: bool, ascii_only: bool, prose: str
) -> None:
    separators = (",", ":") if compact else None
    dumped = json.dumps(value, indent=indent, separators=separators, ensure_ascii=ascii_only)
    assert_fast_is_full([dumped, f"{prose} {dumped} {prose}", f"{dumped}\n{dumped}"], value)


@pytest.mark.parametrize(
    "value",
    [
        [1, 4111111111111111],  # "1,4111..." reads as a decimal to the prose rules
        {"a": {"auth": 5}},
        {"cookie": "abc"},
        {"cvv": 123},
        {"card_number": "x1"},
        {"Authorization": "Basic x"},
        {"a": "\u5bc6\u7801\u662fXy7pq2Lm"},  # escaped by ensure_ascii
        {"a": "https://bob:pw@h/x"},  # "\/" when escaped
        {"a": json.dumps({"password": "x1"})},
    ],
)
def test_the_fast_paths_agree_on_the_hard_cases(value: Any) -> None:
    texts = [json.dumps(value, separators=(",", ":")), json.dumps(value).replace("/", "\\/")]
    assert_fast_is_full(texts, value)
    assert redact(texts[0]).kinds
