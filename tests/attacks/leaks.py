"""Class 8: secrets through every write channel, then every byte on disk scanned.

For each documented kind of secret (``capture.secrets``: API keys of several
providers, bearer tokens and JWTs, passwords in several phrasings and
languages, private keys, card numbers, URL passwords) and each write channel
(remember, observe, supersede, every part of ``record_turn`` -- user,
assistant, reasoning, tool-call arguments as a dict and as a JSON string,
tool results as text, as JSON and as a JSON string, meta --
``record_exchange``, ``record_tool_failure``, the memory tool's create,
str_replace and insert, ``edit_file``, working memory, notes, core and
semantic files, the ``memory_write`` tool, a search query, and a hand edit
of MEMORY.md) a fresh random secret is written. Then the workspace is
searched, reindexed, flushed and closed, and every file under it is scanned
for a fragment of each secret. A hit in the quarantine (which keeps bytes a
person typed by hand, byte for byte, by design) is counted as
``quarantined``; any other hit is ``leaked``. A write that raises is
``refused`` (it must not: redaction, not refusal, is the promise).
"""

from __future__ import annotations

import base64
import json
import os
import string
import time
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

from memstrata import Memory
from memstrata.tools import dispatch
from memstrata.tools.memory_tool import MemoryToolHandler

from .common import Attack, Progress, backdate, describe, is_raw, seed_for

_ALNUM = string.ascii_letters + string.digits


class Refused(Exception):
    """A tool answered ``Error: ...``."""


def _token(rng: Random, n: int, alphabet: str = _ALNUM) -> str:
    """A random token with at least one digit, one upper and one lower case letter."""
    body = "".join(rng.choice(alphabet) for _ in range(n - 3))
    return rng.choice(string.digits) + rng.choice(string.ascii_uppercase) + body + "x"


def _luhn(rng: Random) -> str:
    digits = [4] + [rng.randrange(10) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        total += sum(divmod(d * 2, 10)) if i % 2 == 0 else d
    digits.append((10 - total % 10) % 10)
    text = "".join(map(str, digits))
    return " ".join(text[i : i + 4] for i in range(0, 16, 4))


def _pem(rng: Random) -> tuple[str, str]:
    body = base64.b64encode(rng.randbytes(30)).decode()
    return (
        f"-----BEGIN RSA PRIVATE KEY-----\nMIIEow{body}\n"
        f"{base64.b64encode(rng.randbytes(24)).decode()}\n-----END RSA PRIVATE KEY-----",
        f"MIIEow{body}",
    )


def _jwt(rng: Random) -> tuple[str, str]:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    sig = part(rng.randbytes(32))
    head = part(b'{"alg":"HS256","typ":"JWT"}')
    payload = part(json.dumps({"sub": rng.randrange(10**9)}).encode())
    return f"{head}.{payload}.{sig}", sig


Secret = Callable[[Random], tuple[str, str]]  # rng -> (text holding the secret, its needle)


def _plain(make: Callable[[Random], str]) -> Secret:
    def secret(rng: Random) -> tuple[str, str]:
        value = make(rng)
        return value, value

    return secret


def _marked(template: str) -> Secret:
    def secret(rng: Random) -> tuple[str, str]:
        value = _token(rng, 16)
        return template.format(value), value

    return secret


SECRETS: dict[str, Secret] = {
    "openai key": _plain(lambda r: "sk-proj-" + _token(r, 48)),
    "anthropic key": _plain(lambda r: "sk-ant-api03-" + _token(r, 60, _ALNUM + "-_")),
    "github token": _plain(lambda r: "ghp_" + _token(r, 36)),
    "gitlab token": _plain(lambda r: "glpat-" + _token(r, 20)),
    "aws key id": _plain(
        lambda r: "AKIA" + "".join(r.choice(string.ascii_uppercase + "234567") for _ in range(16))
    ),
    "google key": _plain(lambda r: "AIza" + _token(r, 35, _ALNUM + "-_")),
    "slack token": _plain(
        lambda r: f"xoxb-{r.randrange(10**9, 10**10)}-{r.randrange(10**12, 10**13)}-{_token(r, 24)}"
    ),
    "stripe key": _plain(lambda r: "sk_live_" + _token(r, 24)),
    "hugging face token": _plain(lambda r: "hf_" + _token(r, 34)),
    "api_key assignment": _marked("api_key={}"),
    "client_secret json": _marked('"client_secret": "{}"'),
    "bearer token": _marked("Authorization: Bearer {}"),
    "jwt": _jwt,
    "password colon": _marked("password: {}"),
    "password phrase": _marked("my password is {}"),
    "password env": _marked("DB_PASSWORD={}"),
    "password json": _marked('"password": "{}"'),
    "password russian": _marked("пароль: {}"),
    "password uzbek": _marked("parol: {}"),
    "password chinese": _marked("密码是{}"),
    "private key": _pem,
    "card number": _plain(_luhn),
    "url password": _marked("postgres://admin:{}@db.example.com:5432/app"),
}

Channel = Callable[[Memory, str, int], Any]  # (memory, text with a secret, n) -> anything


def _turn(**parts: Any) -> Channel:
    def channel(memory: Memory, text: str, n: int) -> Any:
        pieces: dict[str, Any] = {"user": "hi", "assistant": "ok"}
        for key, value in parts.items():
            pieces[key] = value(text)
        return memory.record_turn(f"leak{n % 7}", **pieces)

    return channel


def _tool(command: str, **fields: Callable[[str], Any]) -> Channel:
    def channel(memory: Memory, text: str, n: int) -> Any:
        path = f"/memories/memory/leak-{n}.md"
        if command != "create":
            MemoryToolHandler(memory).handle(
                {"command": "create", "path": path, "file_text": "# leak\nplaceholder\n"}
            )
        extra = {key: make(text) for key, make in fields.items()}
        answer = MemoryToolHandler(memory).handle({"command": command, "path": path, **extra})
        if answer.startswith("Error"):
            raise Refused(answer)
        return answer

    return channel


def _supersede(memory: Memory, text: str, n: int) -> Any:
    item = memory.remember(f"old value number {n}")
    return memory.supersede(item.id, f"the new value: {text}")


def _dispatch(memory: Memory, text: str, n: int) -> Any:
    answer = dispatch(memory, "memory_write", {"text": f"agent note {n}: {text}"})
    if answer.startswith("Error"):
        raise Refused(answer)
    return answer


CHANNELS: dict[str, Channel] = {
    "remember": lambda m, t, n: m.remember(f"note {n}: {t}"),
    "observe": lambda m, t, n: m.observe(f"Remember that the staging config is {t}"),
    "supersede": _supersede,
    "record_turn user": _turn(user=lambda t: f"here you go: {t}"),
    "record_turn assistant": _turn(assistant=lambda t: f"I used {t}"),
    "record_turn reasoning": _turn(reasoning=lambda t: f"the user gave {t}"),
    "record_turn tool args dict": _turn(
        tool_calls=lambda t: [{"name": "deploy", "arguments": {"config": t}}]
    ),
    "record_turn tool args JSON string": _turn(
        tool_calls=lambda t: [{"name": "deploy", "arguments": json.dumps({"config": t})}]
    ),
    "record_turn tool result text": _turn(
        tool_calls=lambda t: [{"name": "env", "arguments": {}}],
        tool_results=lambda t: [{"content": f"ENV dump: {t}"}],
    ),
    "record_turn tool result JSON": _turn(
        tool_calls=lambda t: [{"name": "env", "arguments": {}}],
        tool_results=lambda t: [{"content": {"env": t}}],
    ),
    "record_turn tool result JSON string": _turn(
        tool_calls=lambda t: [{"name": "env", "arguments": {}}],
        tool_results=lambda t: [{"content": json.dumps({"env": t})}],
    ),
    "record_turn meta": _turn(meta=lambda t: {"note": t}),
    "record_exchange": lambda m, t, n: m.record_exchange(f"use {t}", "ok"),
    "record_tool_failure args": lambda m, t, n: m.record_tool_failure(
        f"tool{n}", {"config": t}, "failed"
    ),
    "record_tool_failure args JSON string": lambda m, t, n: m.record_tool_failure(
        f"tool{n}", json.dumps({"config": t}), "failed"
    ),
    "record_tool_failure error": lambda m, t, n: m.record_tool_failure(
        f"tool{n}", {}, f"401 with {t}"
    ),
    "memory tool create": _tool("create", file_text=lambda t: f"# leak\n{t}\n"),
    "memory tool str_replace": _tool(
        "str_replace", old_str=lambda t: "placeholder", new_str=lambda t: t
    ),
    "memory tool insert": _tool("insert", insert_line=lambda t: 1, insert_text=lambda t: t),
    "edit_file": lambda m, t, n: m.documents.edit_file(
        f"memory/edit-{n}.md", lambda _: f"# e\n{t}\n"
    ),
    "working_add": lambda m, t, n: m.working.add("open_threads", f"check {t}"),
    "working_progress": lambda m, t, n: m.working.progress(f"rotated {t}"),
    "note_create": lambda m, t, n: m.notes.create(f"note {n}", f"body {t}"),
    "set_core": lambda m, t, n: m.core.write("user", f"# User\n{t}\n"),
    "semantic_add": lambda m, t, n: m.semantic.add("facts", f"the key is {t}"),
    "tool memory_write": _dispatch,
    "search query": lambda m, t, n: m.search(f"find {t}"),
}


def _fragments(needle: str) -> list[bytes]:
    """Pieces of a secret that betray it (a partial redaction leaves one of them)."""
    raw = needle.encode()
    if len(raw) <= 16:
        return [raw]
    return [raw[:12], raw[-12:], raw[len(raw) // 2 - 6 : len(raw) // 2 + 6]]


def _hits(data: bytes, needle: str) -> int:
    forms = {needle, needle.replace(" ", ""), json.dumps(needle)[1:-1]}
    return max(data.count(f) for form in forms for f in _fragments(form))


def scan(ws: Path, needles: dict[tuple[str, str], str]) -> dict[tuple[str, str], dict[str, int]]:
    """(kind, channel) -> {relative path: hits} for every file under ``ws``."""
    found: dict[tuple[str, str], dict[str, int]] = {}
    for folder, _dirs, files in os.walk(ws):
        for name in files:
            path = Path(folder, name)
            data = path.read_bytes()
            relative = path.relative_to(ws).as_posix()
            for key, needle in needles.items():
                hits = _hits(data, needle)
                if hits:
                    found.setdefault(key, {})[relative] = hits
    return found


def _hand_edit(ws: Path, memory: Memory, texts: list[str]) -> None:
    """A person adds a line per secret to MEMORY.md; the agent takes it in."""
    memory.flush()
    path = ws / "MEMORY.md"
    lines = "".join(f"- typed by hand: {' '.join(text.split())}\n" for text in texts)
    path.write_text(path.read_text().replace("## Facts\n", "## Facts\n" + lines, 1))
    backdate(path)
    memory.flush()


def run(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 8: every kind of secret through every channel, once each."""
    del scale  # every combination is tried once
    attack = Attack("secrets/every channel", seed=seed_for(seed, "secrets"))
    rng = Random(attack.seed)
    started = time.perf_counter()
    ws = base / "ws"
    needles: dict[tuple[str, str], str] = {}
    refused: dict[tuple[str, str], str] = {}
    by_hand: list[str] = []
    control = "control" + _token(rng, 20)  # no secret: the scan must find it
    with Memory.open(ws, embedder="none") as memory:
        memory.remember(f"My name is Dilnoza and the control word is {control}")
        n = 0
        for kind, make in SECRETS.items():
            for channel, write in CHANNELS.items():
                text, needle = make(rng)
                needles[(kind, channel)] = needle
                try:
                    write(memory, text, n)
                except Exception as exc:  # noqa: BLE001 - a finding
                    raw = is_raw(exc) and not isinstance(exc, Refused)
                    refused[(kind, channel)] = ("raw " if raw else "") + describe(exc)
                n += 1
            text, needle = make(rng)
            needles[(kind, "hand edit of MEMORY.md")] = needle
            by_hand.append(text)
        _hand_edit(ws, memory, by_hand)
        typed = sum(1 for item in memory.list() if item.text.startswith("typed by hand"))
        memory.search("what is the key")
        memory.reindex()
        memory.flush()
    found = scan(ws, {**needles, ("control", "control"): control})
    with attack.attempt("the scan finds what is no secret", attack.seed) as attempt:
        if "MEMORY.md" not in found.get(("control", "control"), {}):
            attempt.fail("blind", "the scan does not find the control word in MEMORY.md")
        if typed != len(SECRETS):
            attempt.fail("blind", f"{typed} of {len(SECRETS)} lines typed by hand were taken in")
    for key in needles:
        with attack.attempt(f"{key[0]} via {key[1]}", attack.seed) as attempt:
            if key in refused:
                if refused[key].startswith("raw "):
                    attempt.raw(refused[key][4:])
                else:
                    attempt.fail("refused", refused[key])
            where = found.get(key, {})
            aside = sum(h for p, h in where.items() if p.startswith(".memstrata/quarantine/"))
            attack.counts["quarantined"] += aside
            leaked = {p: h for p, h in where.items() if not p.startswith(".memstrata/quarantine/")}
            attempt.leak(sum(leaked.values()), f"in {sorted(leaked)[:4]}")
    attack.seconds = time.perf_counter() - started
    say(f"{attack.name}: {attack.passed}/{attack.tries} passed, {attack.leaked} leaked")
    return [attack]
