"""Crash safety: a writer killed with SIGKILL at a random moment loses nothing it acknowledged.

A child process writes in a loop and prints each text only after the call
returned; the parent kills it at a random moment (after a random number of
acknowledged lines, after a random sleep, or while it is still opening), then
checks the files left behind and that every acknowledged text is there.
Rounds run on the SAME workspace, so later kills land in files that earlier
kills (and the parent's own checkpoints) produced.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.doctor import Level, diagnose
from memstrata.storage.quarantine import list_quarantine
from memstrata.storage.workspace import Workspace
from memstrata.stores import markdown
from memstrata.stores.longterm import Snapshot

pytestmark = pytest.mark.slow  # subprocesses killed with SIGKILL

# argv: workspace, mode. Mode words: "cp" checkpoints every 7 records, "forget"
# mixes in forgets of earlier items, "nosync" uses group commit (sync=False).
CHILD = r"""
import os, sys
from memstrata import Memory

ws, mode = sys.argv[1], sys.argv[2].split()
memory = Memory.open(ws, **({"checkpoint_every_updates": 7} if "cp" in mode else {}))
print("open", flush=True)
kept, sync = [], "nosync" not in mode
for i in range(20_000):
    item = memory.remember(f"fact {os.getpid()}-{i} {'x' * (1 + i % 40)}", sync=sync)
    print("R", item.text, flush=True)
    kept.append(item)
    if "forget" in mode and i % 3 == 2:
        gone = kept.pop(len(kept) // 2)
        print("f", gone.text, flush=True)
        memory.forget(gone.id)
        print("F", gone.text, flush=True)
"""


@dataclass
class Acknowledged:
    """What the children reported as done, over all rounds."""

    remembered: set[str] = field(default_factory=set)
    forgotten: set[str] = field(default_factory=set)
    forgetting: set[str] = field(default_factory=set)  # forget called, maybe not returned
    writes: int = 0  # acknowledged remember/forget calls over all rounds

    @property
    def must_exist(self) -> set[str]:
        return self.remembered - self.forgetting

    def take(self, output: bytes) -> int:
        """Record every complete line of a child's stdout; returns how many writes it had."""
        count = 0
        for raw in output.splitlines(keepends=True):
            if not raw.endswith(b"\n"):
                continue  # killed while printing: not acknowledged
            kind, _, text = raw.decode().rstrip("\n").partition(" ")
            if kind == "R":
                self.remembered.add(text)
            elif kind == "F":
                self.forgotten.add(text)
            elif kind == "f":
                self.forgetting.add(text)
                continue
            else:
                assert raw == b"open\n", raw
                continue
            count += 1
        return count


def kill_round(ws: Path, mode: str, rng: random.Random, *, early_kill: bool) -> bytes:
    """Run one child and SIGKILL it at a random moment; returns all it printed."""
    how = rng.choice(["lines", "sleep", "opening"] if early_kill else ["lines", "sleep"])
    command = [sys.executable, "-c", CHILD, str(ws), mode]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        seen = b""
        try:
            if how == "opening":  # lands in interpreter start-up or inside Memory.open
                time.sleep(rng.uniform(0.05, 0.2))
            else:
                seen = proc.stdout.readline()
                assert seen == b"open\n", proc.stderr.read().decode()
                if how == "lines":
                    for _ in range(rng.randint(0, 60)):
                        line = proc.stdout.readline()
                        assert line, "the child died before it was killed"
                        seen += line
                else:
                    time.sleep(rng.uniform(0.0, 0.15))
        finally:
            proc.send_signal(signal.SIGKILL)
        # Not communicate(): it would drop what readline() has buffered already.
        output = seen + proc.stdout.read()
        err = proc.stderr.read().decode()
    assert proc.returncode == -signal.SIGKILL, f"child ended by itself: {err}"
    return output


def assert_no_corrupt_files(ws: Path, *, after_kill: bool) -> None:
    """Files a kill (or a checkpoint) left are readable; ``after_kill`` allows a torn tail."""
    findings = diagnose(Workspace.locate(ws))
    errors = [f for f in findings if f.level is Level.ERROR]
    assert errors == [], errors
    data = (ws / "MEMORY.md").read_bytes()
    data.decode("utf-8")
    assert markdown.parse(data).bad == []
    Snapshot.load(ws / "memory" / "LTM_SNAPSHOT.json")
    audit = ws / "memory" / "LTM_AUDIT.jsonl"
    lines = audit.read_bytes().splitlines(keepends=True) if audit.exists() else []
    if after_kill and lines and not lines[-1].endswith(b"\n"):
        lines.pop()  # killed inside an append: the next checkpoint sets it aside
    lsns = [json.loads(line)["lsn"] for line in lines]
    assert lsns == sorted(set(lsns)), "audit lsns must be strictly increasing"


def assert_everything_acknowledged_is_there(ws: Path, acked: Acknowledged) -> None:
    memory = Memory.open(ws)
    try:
        texts = [item.text for item in memory.list()]
        notices = memory.notices
    finally:
        memory.close()
    assert len(texts) == len(set(texts)), "duplicate texts"
    missing = acked.must_exist - set(texts)
    assert not missing, f"{len(missing)} acknowledged write(s) lost, e.g. {sorted(missing)[:3]}"
    resurrected = acked.forgotten & set(texts)
    assert not resurrected, f"acknowledged forgets undone: {sorted(resurrected)[:3]}"
    # A kill leaves at most a torn journal tail; anything else would be corruption.
    assert all("torn" in notice for notice in notices), notices


def assert_final_state(ws: Path, acked: Acknowledged) -> None:
    """After the last checkpoint: every file complete and agreeing with the others."""
    assert_no_corrupt_files(ws, after_kill=False)
    with Memory.open(ws) as memory:
        live = {item.id: item.text for item in memory.list()}
    # Writes that returned but were killed before their print may be there too.
    assert acked.must_exist <= set(live.values())
    assert not acked.forgotten & set(live.values())
    parsed = markdown.parse((ws / "MEMORY.md").read_bytes())
    assert {line.item_id: line.text for line in parsed.lines} == live
    snapshot = Snapshot.load(ws / "memory" / "LTM_SNAPSHOT.json")
    assert {i.id: i.text for i in snapshot.items.values()} == live
    audit = [
        json.loads(line)
        for line in (ws / "memory" / "LTM_AUDIT.jsonl").read_text().split("\n")[:-1]
    ]
    audited = {
        item["text"] for record in audit if record["op"] == "ltm.put" for item in record["items"]
    }
    assert acked.remembered <= audited, "every acknowledged write is in the audit log"
    for entry in list_quarantine(ws / ".memstrata" / "quarantine"):
        assert entry.reason.startswith("torn"), entry  # only torn tails were set aside


def kill_rounds(ws: Path, modes: list[str], rounds: int, *, early_kill: bool) -> Acknowledged:
    """``rounds`` kill rounds cycling through ``modes``, each checked; what was acknowledged."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    acked = Acknowledged()
    for round_no in range(rounds):
        mode = modes[round_no % len(modes)]
        output = kill_round(ws, mode, rng, early_kill=early_kill and round_no > 0)
        acked.writes += acked.take(output)
        try:
            assert_no_corrupt_files(ws, after_kill=True)
            assert_everything_acknowledged_is_there(ws, acked)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, round {round_no}, mode {mode!r}: {exc}") from exc
    return acked


def test_sigkill_at_random_moments_loses_no_acknowledged_write(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    acked = kill_rounds(ws, ["sync", "cp", "forget", "cp forget"], 40, early_kill=True)
    assert acked.writes >= 100, "the kills landed too early to test anything"
    assert acked.forgotten, "no forget was acknowledged"
    assert_final_state(ws, acked)


def test_group_committed_writes_survive_sigkill(tmp_path: Path) -> None:
    """``sync=False`` hands the record to the kernel before returning: kill -9 cannot lose it."""
    ws = tmp_path / "ws"
    acked = kill_rounds(ws, ["nosync", "nosync cp"], 12, early_kill=False)
    assert acked.writes >= 30, "the kills landed too early to test anything"
    assert_final_state(ws, acked)


# argv: workspace. Prints each i only after observe() returned.
OBSERVE_CHILD = r"""
import os, sys
from memstrata import Memory

memory = Memory.open(sys.argv[1], session_state_max_chars=10_000_000)
print("open", flush=True)
for i in range(100_000):
    memory.observe(f"Remember that item {os.getpid()}-{i} is ready")
    print(i, os.getpid(), flush=True)
"""


def acked_lines(ws: Path, child: str, acks: int) -> list[str]:
    """Run ``child`` on ``ws``, SIGKILL it after ``acks`` acknowledgements; the
    whole lines it printed after "open" (a torn last line is no acknowledgement)."""
    command = [sys.executable, "-c", child, str(ws)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            seen = proc.stdout.readline()
            assert seen == b"open\n", proc.stderr.read().decode()
            for _ in range(acks):
                line = proc.stdout.readline()
                assert line, "the child died before it was killed"
                seen += line
        finally:
            proc.send_signal(signal.SIGKILL)
        output = seen + proc.stdout.read()
        err = proc.stderr.read().decode()
    assert proc.returncode == -signal.SIGKILL, f"child ended by itself: {err}"
    return [raw.decode() for raw in output.splitlines(keepends=True)[1:] if raw.endswith(b"\n")]


def observe_kill_round(ws: Path, acks: int) -> list[str]:
    """The texts an observing child acknowledged before it was killed."""
    acked = []
    for line in acked_lines(ws, OBSERVE_CHILD, acks):
        i, pid = line.split()
        acked.append(f"Remember that item {pid}-{i} is ready")
    return acked


def test_observed_messages_survive_sigkill(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    rng = random.Random()
    acked: list[str] = []
    for _ in range(2):  # the second child starts on what the first kill left
        acked += observe_kill_round(ws, rng.randint(150, 300))
        assert_no_corrupt_files(ws, after_kill=True)
    assert len(acked) >= 300
    with Memory.open(ws, session_state_max_chars=10_000_000) as memory:
        facts = [item.text for item in memory.list()]
        logged = [e.text for e in memory.session_state() if "remember" in e.category]
        notices = memory.notices
    assert len(facts) == len(set(facts)), "duplicate facts"
    missing = set(acked) - set(facts)
    assert not missing, f"{len(missing)} acknowledged capture(s) lost, e.g. {sorted(missing)[:3]}"
    unlogged = set(acked) - set(logged)
    assert not unlogged, f"{len(unlogged)} missing from SESSION-STATE.md: {sorted(unlogged)[:3]}"
    for text in acked:
        assert logged.count(text) == 1, text
    assert all("torn" in notice for notice in notices), notices
    assert_no_corrupt_files(ws, after_kill=False)


# argv: workspace. Prints "<pid>-<i> <seq>" only after record_turn() returned.
TURN_CHILD = r"""
import os, sys
from memstrata import Memory

memory = Memory.open(sys.argv[1], embedder="none")
print("open", flush=True)
for i in range(100_000):
    turn = memory.record_turn("crash", user=f"turn {os.getpid()}-{i}", assistant="ok")
    print(f"{os.getpid()}-{i}", turn.seq, flush=True)
"""


def test_recorded_turns_survive_sigkill(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    rng = random.Random()
    acked: dict[str, int] = {}
    for _ in range(3):  # each child starts on what the last kill left
        for line in acked_lines(ws, TURN_CHILD, rng.randint(50, 200)):
            name, seq = line.split()
            acked[f"turn {name}"] = int(seq)
    with Memory.open(ws, embedder="none") as memory:
        turns = memory.sessions.turns("crash")
        assert all("torn" in notice for notice in memory.notices), memory.notices
    said = {turn.text_of("user"): turn.seq for turn in turns}
    missing = set(acked) - set(said)
    assert not missing, f"{len(missing)} acknowledged turn(s) lost, e.g. {sorted(missing)[:3]}"
    assert all(said[text] == seq for text, seq in acked.items()), "a turn changed its seq"
    seqs = [turn.seq for turn in turns]
    assert seqs == list(range(1, len(seqs) + 1)), "seq must count up without gaps or repeats"
    assert_no_corrupt_files(ws, after_kill=False)


# argv: workspace. ``record_turns`` (group commit) in batches of 1-40 turns over
# two sessions and three days; prints "<session> <pid>-<i> <seq>" for each turn
# of a batch only after the call returned.
TURNS_CHILD = r"""
import os, random, sys
from datetime import datetime, timedelta, timezone
from memstrata import Memory

memory = Memory.open(sys.argv[1], embedder="none")
print("open", flush=True)
rng, start, i = random.Random(os.getpid()), datetime(2026, 3, 1, 12, tzinfo=timezone.utc), 0
while True:
    batch = []
    for _ in range(rng.randint(1, 40)):
        at = start + timedelta(days=i % 3, seconds=i)
        batch.append({"session": f"crash-{i % 2}", "user": f"turn {os.getpid()}-{i}",
                      "assistant": "ok", "at": at})
        i += 1
    turns = memory.record_turns(batch)
    said = "".join(f"{t.session} {t.text_of('user')[5:]} {t.seq}\n" for t in turns)
    print(said, end="", flush=True)
"""


def test_turns_recorded_in_batches_survive_sigkill(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    rng = random.Random()
    acked: dict[str, tuple[str, int]] = {}
    for _ in range(3):  # each child starts on what the last kill left
        for line in acked_lines(ws, TURNS_CHILD, rng.randint(100, 600)):
            session, name, seq = line.split()
            acked[f"turn {name}"] = (session, int(seq))
    assert len(acked) >= 300
    notes = "".join(path.read_text() for path in sorted((ws / "memory").glob("2026-03-0*.md")))
    with Memory.open(ws, embedder="none") as memory:
        said: dict[str, tuple[str, int]] = {}
        for session in ("crash-0", "crash-1"):
            turns = memory.sessions.turns(session)
            seqs = [turn.seq for turn in turns]
            assert seqs == list(range(1, len(seqs) + 1)), "seq must count up without gaps"
            said |= {turn.text_of("user"): (session, turn.seq) for turn in turns}
            audited = {e["content"] for e in memory.sessions.audit(session) if e["role"] == "user"}
            assert {t for t, (s, _) in acked.items() if s == session} <= audited
        assert all("torn" in notice for notice in memory.notices), memory.notices
    missing = set(acked) - set(said)
    assert not missing, f"{len(missing)} acknowledged turn(s) lost, e.g. {sorted(missing)[:3]}"
    assert all(said[text] == place for text, place in acked.items()), "a turn moved"
    unnoted = [text for text in acked if f"**User:** {text}\n" not in notes]
    assert not unnoted, f"{len(unnoted)} acknowledged turn(s) not in a daily note: {unnoted[:3]}"
    assert_no_corrupt_files(ws, after_kill=False)
