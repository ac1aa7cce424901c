"""Class 4: damaged files of every kind.

Each try seeds a fresh workspace (facts, a forget, a supersede, turns, a
document, a lesson, a built index; for journal damage also records a child
wrote and never checkpointed), closes it, damages one file (MEMORY.md's mtime
is then set 10 s back so the damage is not taken for a save in progress),
runs ``doctor``, opens the workspace, reads (list, get, status, search,
build_context, turns, forgotten, lessons), writes (remember, record_turn,
edit_file, flush), closes and reopens it. Counted: facts, turns and document
lines lost compared to before the damage (a fact or turn found in the
quarantine is counted as ``set_aside`` instead: a damaged journal record or
transcript line may only be set aside), raw exceptions (anything not a
``MemstrataError``), and ``refused`` calls (a ``MemstrataError`` where the
call should have worked). ``memstrata.toml`` damage is tried through the CLI
(one line, no traceback) and ``load_settings`` (``InvalidInput``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from random import Random

from memstrata import Memory
from memstrata.config import load_settings
from memstrata.errors import InvalidInput
from memstrata.storage.quarantine import list_quarantine
from memstrata.storage.workspace import Workspace
from memstrata.stores.transcripts import read_turns

from .common import (
    Attack,
    Progress,
    Try,
    backdate,
    describe,
    doctor_errors,
    python,
    rounds,
    run_child,
    seed_for,
)

# Damages a closed workspace; returns the original bytes of the record it
# damaged when only that record may be lost (set aside), else None.
Damage = Callable[[Path, Random], object]

# argv: workspace. Writes facts and exits without a checkpoint: they stay in the journal.
JOURNAL_CHILD = r"""
import os, sys
from memstrata import Memory

memory = Memory.open(sys.argv[1], embedder="none", checkpoint_interval_seconds=0)
for i in range(8):
    memory.remember(f"journal fact {i} only in the journal")
sys.stdout.flush()
os._exit(0)
"""

CLI = "import sys; from memstrata.cli import main; sys.argv[0] = 'memstrata'; sys.exit(main())"


@dataclass
class Before:
    """What the workspace held before the damage."""

    facts: dict[str, str]
    forgotten: set[str]
    turns: set[str]
    lines: list[str]  # of memory/notes.md


def populate(ws: Path, journal: bool) -> Before:
    with Memory.open(ws, embedder="none") as memory:
        items = [memory.remember(f"seeded fact {i} about topic {i * 7}") for i in range(25)]
        memory.forget(items[3].id)
        memory.supersede(items[4].id, "seeded fact 4, corrected")
        for i in range(5):
            memory.record_turn("s1", user=f"user turn {i}", assistant=f"answer {i}")
        memory.documents.edit_file("memory/notes.md", lambda _: "# notes\nkeep this line\n")
        memory.record_tool_failure("grep", {"pattern": "x"}, "grep failed")
        memory.search("seeded fact")  # the index is on disk
    if journal:
        run_child([python(), "-c", JOURNAL_CHILD, str(ws)])
    with Memory.open(ws, embedder="none", read_only=True) as memory:
        facts = {item.id: item.text for item in memory.list()}
        forgotten = {entry.item.id for entry in memory.forgotten()}
    turns = {t.text_of("user") for t in read_turns(Workspace.locate(ws), "s1")}
    return Before(facts, forgotten, turns, (ws / "memory" / "notes.md").read_text().splitlines())


# -- the damage ------------------------------------------------------------------


def _fact_line(data: bytes, rng: Random) -> int:
    lines = data.split(b"\n")
    numbers = [n for n, line in enumerate(lines) if line.startswith(b"- ") and b"^" in line]
    return rng.choice(numbers)


def _replace_line(data: bytes, number: int, new: bytes) -> bytes:
    lines = data.split(b"\n")
    lines[number] = new
    return b"\n".join(lines)


def _bad_line(ws: Path, rng: Random, bad: bytes) -> None:
    path = ws / "MEMORY.md"
    data = path.read_bytes()
    number = _fact_line(data, rng)
    line = data.split(b"\n")[number]
    cut = rng.randrange(3, len(line) - 12)
    path.write_bytes(_replace_line(data, number, line[:cut] + bad + line[cut:]))


def _insert_line(path: Path, rng: Random, line: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    at = rng.randrange(1, max(2, len(lines) - 1))
    lines.insert(at, line)
    path.write_bytes(b"\n".join(lines))


def _journal_line(path: Path, rng: Random, *, header: bool = False) -> tuple[bytes, int]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    records = [n for n, line in enumerate(lines) if line][:-1]  # not the last one
    return data, 0 if header else rng.choice(records[1:] or records)


def _flip(ws: Path, rng: Random, *, header: bool = False) -> bytes:
    path = ws / ".memstrata" / "journal.wal"
    data, number = _journal_line(path, rng, header=header)
    lines = data.split(b"\n")
    original = lines[number]
    line = bytearray(original)
    at = rng.randrange(9, len(line))
    flipped = line[at] ^ (1 << rng.randrange(7))
    line[at] = flipped if flipped not in (0, 0x0A) else 0x41
    lines[number] = bytes(line)
    path.write_bytes(b"\n".join(lines))
    return original


def _torn(path: Path, rng: Random) -> bytes:
    data = path.read_bytes().rstrip(b"\n")
    last = data.rsplit(b"\n", 1)[-1]
    path.write_bytes(data[: len(data) - rng.randrange(1, len(last) - 1)])
    return last


MD = Path("MEMORY.md")
SNAPSHOT = Path("memory/LTM_SNAPSHOT.json")
WAL = Path(".memstrata/journal.wal")
TRANSCRIPT = Path("sessions/s1.jsonl")
INDEX = Path(".memstrata/index.sqlite")
TOML = Path("memstrata.toml")


def _at(relative: Path, change: Callable[[bytes, Random], bytes]) -> Damage:
    def damage(ws: Path, rng: Random) -> None:
        path = ws / relative
        path.write_bytes(change(path.read_bytes(), rng))

    return damage


def _gone(relative: Path) -> Damage:
    return lambda ws, rng: (ws / relative).unlink()


def _garbage(data: bytes, rng: Random) -> bytes:
    return rng.randbytes(max(len(data), 64))


def _half(data: bytes, rng: Random) -> bytes:
    return data[: len(data) // 2]


def _md_no_title(data: bytes, rng: Random) -> bytes:
    return b"\n".join(line for line in data.split(b"\n") if not line.startswith(b"# "))


def _md_long_line(data: bytes, rng: Random) -> bytes:
    return data.replace(b"## Facts\n", b"## Facts\n- " + b"x" * 50_000 + b"\n", 1)


def _md_duplicate_line(data: bytes, rng: Random) -> bytes:
    number = _fact_line(data, rng)
    lines = data.split(b"\n")
    lines.insert(number, lines[number])
    return b"\n".join(lines)


def _settings(text: bytes) -> Damage:
    return lambda ws, rng: (ws / TOML).write_bytes(text)


DAMAGES: dict[str, Damage] = {
    "MEMORY.md/random bytes": _at(MD, _garbage),
    "MEMORY.md/truncated to half": _at(MD, _half),
    "MEMORY.md/empty": _at(MD, lambda d, r: b""),
    "MEMORY.md/title removed": _at(MD, _md_no_title),
    "MEMORY.md/a 50 KB line": _at(MD, _md_long_line),
    "MEMORY.md/invalid UTF-8 in one line": lambda ws, r: _bad_line(ws, r, b"\xff\xfe"),
    "MEMORY.md/encoded surrogate": lambda ws, r: _bad_line(ws, r, b"\xed\xa0\x80"),
    "MEMORY.md/NUL in one line": lambda ws, r: _bad_line(ws, r, b"\x00"),
    "MEMORY.md/UTF-8 BOM": _at(MD, lambda d, r: b"\xef\xbb\xbf" + d),
    "MEMORY.md/CRLF line ends": _at(MD, lambda d, r: d.replace(b"\n", b"\r\n")),
    "MEMORY.md/a line twice": _at(MD, _md_duplicate_line),
    "MEMORY.md/missing": _gone(MD),
    "snapshot/garbage": _at(SNAPSHOT, _garbage),
    "snapshot/truncated": _at(SNAPSHOT, _half),
    "snapshot/empty": _at(SNAPSHOT, lambda d, r: b""),
    "snapshot/a JSON list": _at(SNAPSHOT, lambda d, r: b"[]"),
    "snapshot/wrong types": _at(
        SNAPSHOT, lambda d, r: d.replace(b'"items":[', b'"items":[5,"x",null,', 1)
    ),
    "snapshot/missing": _gone(SNAPSHOT),
    "journal/torn tail": lambda ws, r: _torn(ws / WAL, r),
    "journal/flipped byte mid-file": lambda ws, r: _flip(ws, r),
    "journal/flipped byte in the header": lambda ws, r: _flip(ws, r, header=True),
    "journal/garbage line mid-file": lambda ws, r: _insert_line(
        ws / WAL, r, r.randbytes(40).replace(b"\n", b"")
    ),
    "journal/garbage tail": _at(WAL, lambda d, r: d + r.randbytes(30).replace(b"\n", b"")),
    "transcript/bad JSON line": lambda ws, r: _insert_line(ws / TRANSCRIPT, r, b"{not json"),
    "transcript/invalid UTF-8 line": lambda ws, r: _insert_line(
        ws / TRANSCRIPT, r, b'{"x": "\xff\xfe"}'
    ),
    "transcript/wrong schema line": lambda ws, r: _insert_line(
        ws / TRANSCRIPT, r, b'{"schema_version": 99, "seq": "a"}'
    ),
    "transcript/torn tail": lambda ws, r: _torn(ws / TRANSCRIPT, r),
    "transcript/audit log garbage": lambda ws, r: _insert_line(
        ws / "sessions" / "s1.audit.jsonl", r, r.randbytes(30)
    ),
    "index/garbage": _at(INDEX, _garbage),
    "index/truncated": _at(INDEX, _half),
    "index/empty": _at(INDEX, lambda d, r: b""),
    "memstrata.toml/invalid TOML": _settings(b"[memory\nflush_every_updates = = 3\n"),
    "memstrata.toml/invalid UTF-8": _settings(b"[memory]\n# \xff\xfe\nmax_items = 3\n"),
    "memstrata.toml/wrong types": _settings(b'[memory]\nflush_every_updates = "x"\n'),
    "memstrata.toml/memory not a table": _settings(b"memory = 5\n"),
    "memstrata.toml/unknown setting": _settings(b"[memory]\nno_such_setting = 1\n"),
    "lessons/garbage line": lambda ws, r: _insert_line(
        ws / "memory" / "LESSONS.jsonl", r, b"{broken"
    ),
    "core/SOUL.md invalid UTF-8": _at(Path("core/SOUL.md"), lambda d, r: d + b"\xff\xfe\n"),
    "merge bases garbage": lambda ws, r: [
        p.write_bytes(r.randbytes(50)) for p in (ws / ".memstrata" / "rendered").iterdir()
    ],
    "transcripts-verified.json garbage": lambda ws, r: (
        ws / ".memstrata" / "transcripts-verified.json"
    ).write_bytes(b"\xff{"),
    "quarantine index garbage": lambda ws, r: (
        ws / ".memstrata" / "quarantine" / "INDEX.jsonl"
    ).write_bytes(b"\xff{\n[1]\n"),
}


# -- after the damage ----------------------------------------------------------------


def _said(text: str) -> bytes:
    """``text`` as a JSON line holds it."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode()


def quarantined(ws: Path) -> bool:
    """Whether the quarantine holds bytes of the journal or a transcript."""
    entries = list_quarantine(ws / ".memstrata" / "quarantine")
    return any(e.original in ("journal.wal", "sessions/s1.jsonl") for e in entries)


def exercise(ws: Path, attempt: Try) -> None:
    """Open, read, write, close, as an agent would; every exception counted."""
    opened = attempt.call("open", lambda: Memory.open(ws, embedder="none"))
    if opened is None:
        return
    memory: Memory = opened
    items = attempt.call("list", memory.list) or []
    if items:
        attempt.call("get", lambda: memory.get(items[0].id))
    hits = attempt.call("search", lambda: memory.search("seeded fact"))
    if hits == []:
        attempt.fail("search_empty", "search finds no seeded fact after the damage")
    for where, call in (
        ("status", memory.status),
        ("build_context", lambda: memory.build_context("what about topic 7?", budget_tokens=400)),
        ("turns", lambda: memory.sessions.turns("s1")),
        ("forgotten", memory.forgotten),
        ("lessons", memory.lessons.list),
        ("remember", lambda: memory.remember("written after the damage")),
        ("record_turn", lambda: memory.record_turn("s1", user="after damage", assistant="ok")),
        (
            "edit_file",
            lambda: memory.documents.edit_file("memory/notes.md", lambda t: (t or "") + "more\n"),
        ),
        ("flush", memory.flush),
    ):
        attempt.call(where, call)
    attempt.call("close", memory.close)


def check_settings(ws: Path, attempt: Try) -> None:
    """A bad memstrata.toml: the CLI says one line, ``load_settings`` raises InvalidInput."""
    try:
        load_settings(ws)
        attempt.fail("accepted", "load_settings accepted a bad memstrata.toml")
    except InvalidInput:
        pass
    except Exception as exc:  # noqa: BLE001 - a finding
        attempt.raw(f"load_settings: {describe(exc)}")
    for args in (["list", "--json"], ["doctor"], ["remember", "a fact"]):
        done = run_cli([*args, "-w", str(ws)])
        if "Traceback" in done.error:
            attempt.raw(f"memstrata {args[0]}: {done.error.strip().splitlines()[-1][:240]}")
        elif args[0] != "doctor" and not done.error:
            attempt.fail("accepted", f"memstrata {args[0]} ran with a bad memstrata.toml")


@dataclass
class CliRun:
    error: str  # stderr of a failed run ("" when it succeeded)


def run_cli(args: list[str]) -> CliRun:
    import subprocess

    from .common import child_env

    done = subprocess.run(
        [python(), "-c", CLI, *args], capture_output=True, text=True, env=child_env(), check=False
    )
    return CliRun("" if done.returncode == 0 else done.stderr or f"exit {done.returncode}")


def compare(ws: Path, before: Before, damaged: bytes | None, attempt: Try) -> None:
    """What is gone since before the damage (after a reopen); what ``damaged``
    (the original bytes of the damaged record) held counts as set aside if
    the quarantine holds a copy of that file's bytes."""
    opened = attempt.call("reopen", lambda: Memory.open(ws, embedder="none"))
    if opened is None:
        attempt.lose(len(before.facts), "every fact: the workspace does not open")
        return
    with opened as memory:
        live = {item.id: item.text for item in memory.list()}
        forgotten = {entry.item.id for entry in memory.forgotten()}
    after = set(live.values())
    # A fact whose line the damage changed but that is still there (by id) was edited, not lost.
    edited = {k for k, text in before.facts.items() if k in live and live[k] != text}
    attempt.attack.counts["edited_by_the_damage"] += len(edited)
    # Restorability of forgotten facts (kept in the snapshot only): counted, not a loss.
    attempt.attack.counts["forgotten_unrestorable"] += len(before.forgotten - forgotten)
    turns = {t.text_of("user") for t in read_turns(Workspace.locate(ws), "s1")}
    notes = ws / "memory" / "notes.md"
    lines = set(notes.read_text(errors="replace").splitlines()) if notes.exists() else set()
    aside = bool(damaged) and quarantined(ws)
    for what, gone in (
        ("facts", sorted({t for k, t in before.facts.items() if k not in edited} - after)),
        ("turns", sorted(before.turns - turns)),
        ("memory/notes.md lines", [line for line in before.lines if line not in lines]),
    ):
        kept = [text for text in gone if aside and damaged and _said(text) in damaged]
        attempt.attack.counts["set_aside"] += len(kept)
        lost = [text for text in gone if text not in kept]
        attempt.lose(len(lost), f"{what} {lost[:3]}")
    if after and "written after the damage" not in after:
        attempt.lose(1, "the fact written after the damage")


def run_damage(base: Path, name: str, tries: int, seed: int) -> Attack:
    """``tries`` tries of damage ``name``, each on a fresh workspace under ``base``."""
    damage = DAMAGES[name]
    attack = Attack(f"damage/{name}", seed=seed)
    rng = Random(seed)
    started = time.perf_counter()
    settings = name.startswith("memstrata.toml/")
    for number in range(tries):
        try_seed = rng.randrange(2**32)
        ws = base / f"{list(DAMAGES).index(name):02d}-{number}"
        with attack.attempt(f"try {number}", try_seed) as attempt:
            before = populate(ws, journal=name.startswith("journal/"))
            damaged = damage(ws, Random(try_seed))
            backdate(ws / "MEMORY.md")
            for problem in doctor_errors(ws):
                if "raised" in problem:
                    attempt.raw(problem)
            if settings:
                check_settings(ws, attempt)
            exercise(ws, attempt)
            compare(ws, before, damaged if isinstance(damaged, bytes) else None, attempt)
            for problem in [] if settings else doctor_errors(ws):
                attempt.fail("doctor", f"after the repair: {problem}")
    attack.seconds = time.perf_counter() - started
    return attack


def run(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 4: one attack per kind of damage, ``3 * scale`` tries each."""
    results = []
    for name in DAMAGES:
        attack = run_damage(base, name, rounds(3, scale), seed_for(seed, f"damage/{name}"))
        say(f"{attack.name}: {attack.passed}/{attack.tries} passed, {attack.lost} lost")
        results.append(attack)
    return results
