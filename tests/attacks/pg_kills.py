"""The PostgreSQL campaign's writes: SIGKILL at random instants, and many
writers on one tenant (issue 15's bar).

``run_kills``: each round starts a writer (``pg_writes.CHILD``) on a tenant
and SIGKILLs it at a random instant: while it opens, after a random sleep,
after a random number of acknowledgements, or (modes ``checkpoint`` and
``compact``) on a marker line, i.e. in the middle of a checkpoint or of a
compaction with its transaction open. The parent then opens the tenant fresh
and checks every acknowledged write (``pg_writes.check``), flushes, and checks
the files and the journal's rows. Rounds cycle through the modes, each mode on
a tenant of its own, so later kills land in what earlier kills (and the
parent's own checkpoints) left.

``run_writers``: ``procs`` processes, released together, each ``remember``
``writes`` facts on one fresh tenant: every acknowledged fact is there once,
``procs * writes`` in all, every lsn of the audit log once, and the tenant
reopens clean.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from random import Random

from memstrata import Memory

from .common import Attack, Progress, Try, acks, child_env, child_error, python, quiet
from .pg_writes import CHILD, MODES, Expected, check, file_problems, journal_problems

TESTS = str(Path(__file__).resolve().parents[1])
KILL_MODES = ("mix", "checkpoint", "compact")
CHILD_TIMEOUT = 120.0


def new_mark(name: str) -> str:
    """A word of its own for a tenant's texts (letters and digits only)."""
    return f"{name}{uuid.uuid4().hex[:10]}"


def child_command(
    url: str, tenant: str, mode: str, mark: str, seed: int, ops: int, flag: str = "-"
) -> list[str]:
    return [python(), "-c", CHILD, TESTS, url, tenant, mode, mark, str(seed), str(ops), flag]


@dataclass
class Killed:
    """One writer killed: its complete lines, how the kill was aimed, where it landed."""

    lines: list[str]
    how: str
    landed: str  # "opening", "writing", or the phase of the marker seen last
    error: str  # "" when it was killed as planned


def aim(rng: Random, mode: str) -> str:
    """How to time the kill of a writer in ``mode``."""
    marker = ["marker", "marker"] if mode in ("checkpoint", "compact") else ["acks"]
    return rng.choice(["opening", "sleep", "acks", *marker])


def kill_writer(command: list[str], rng: Random, how: str) -> Killed:
    """Run ``command`` and SIGKILL it at a random instant (see the module)."""
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        watchdog = _watchdog(proc)
        seen: list[bytes] = []
        try:
            if how == "opening":
                time.sleep(rng.uniform(0.05, 1.2))
            else:
                seen.append(proc.stdout.readline())
                if how == "sleep":
                    time.sleep(rng.uniform(0.0, 1.5))
                else:
                    _read_until(proc, seen, rng.randint(0, 60), marker=how == "marker")
        finally:
            proc.send_signal(signal.SIGKILL)
            watchdog.cancel()
        rest = proc.stdout.read()  # not communicate(): keep what readline buffered
        stderr = proc.stderr.read()
    output = b"".join(seen) + rest
    lines = [raw.decode() for raw in output.splitlines(keepends=True) if raw.endswith(b"\n")]
    lines = [line.rstrip("\n") for line in lines]
    error = "" if proc.returncode == -signal.SIGKILL else child_error(stderr, proc.returncode)[0]
    return Killed([line for line in lines if line != "open"], how, _landed(lines), error)


def _read_until(
    proc: subprocess.Popen[bytes], seen: list[bytes], count: int, *, marker: bool
) -> None:
    """Read ``count`` acknowledgements, then (``marker``) up to the next marker
    line, where the child (flag ``step``) waits to be told to go on."""
    assert proc.stdout is not None and proc.stdin is not None
    acked = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            return
        seen.append(line)
        acked += line.startswith(b"A ")
        if acked >= count and (not marker or line.startswith(b"M ")):
            return
        if marker and line.startswith(b"M "):
            proc.stdin.write(b"\n")
            proc.stdin.flush()


def _landed(lines: list[str]) -> str:
    """Where the kill landed, as far as the lines tell: after a marker with no
    acknowledgement since, in that phase."""
    if "open" not in lines:
        return "opening"
    for line in reversed(lines):
        if line.startswith("M "):
            return line.split()[1]
        if line.startswith("A "):
            break
    return "writing"


def _watchdog(proc: subprocess.Popen[bytes]) -> threading.Timer:
    timer = threading.Timer(CHILD_TIMEOUT, proc.kill)
    timer.daemon = True
    timer.start()
    return timer


def run_kills(
    url: str,
    rounds: int,
    seed: int,
    say: Progress = quiet,
    *,
    plan: list[tuple[str, str]] | None = None,
) -> Attack:
    """``rounds`` kills, cycling through ``KILL_MODES`` (see the module);
    ``plan``: these (mode, aim) rounds instead."""
    attack = Attack("postgres/kill", seed=seed)
    rng = Random(seed)
    started = time.perf_counter()
    run = uuid.uuid4().hex[:8]
    tenants = {mode: f"kill-{mode}-{run}" for mode in KILL_MODES}
    marks = {mode: new_mark(mode[:3]) for mode in KILL_MODES}
    expected = {mode: Expected() for mode in KILL_MODES}
    plan = plan or [(KILL_MODES[n % len(KILL_MODES)], "") for n in range(rounds)]
    for number, (mode, planned) in enumerate(plan):
        round_seed = rng.randrange(2**32)
        how = planned or aim(rng, mode)
        tenant, promised = tenants[mode], expected[mode]
        if how == "opening" and rng.random() < 0.5:  # killed while it creates the tenant
            tenant, promised = f"kill-new-{run}-{number}", Expected()
            attack.counts["new_tenants"] += 1
        flag = "step" if how == "marker" else "-"
        command = child_command(url, tenant, mode, marks[mode], round_seed, 100_000, flag)
        killed = kill_writer(command, Random(round_seed), how)
        label = f"round {number} ({mode}, {tenant}, {how}, landed {killed.landed})"
        with attack.attempt(label, round_seed) as attempt:
            if killed.error:
                attempt.fail("child_error", killed.error)
            promised.take(killed.lines)
            attack.counts["acknowledged"] += sum(1 for tag, _ in acks(killed.lines) if tag == "A")
            attack.counts[f"landed_{killed.landed}"] += 1
            attack.counts[f"aimed_{how}"] += 1
            check_tenant(url, tenant, mode, promised, attempt)
        if number % 10 == 9 or number == len(plan) - 1:
            say(f"kill round {number + 1}/{len(plan)}: {attack.lost} lost")
    for mode in KILL_MODES:
        for kind, count in expected[mode].writes.items():
            attack.counts[f"acked_{kind}"] += count
    attack.seconds = time.perf_counter() - started
    return attack


def check_tenant(url: str, tenant: str, mode: str, expected: Expected, attempt: Try) -> None:
    """Open the tenant fresh: what was acknowledged is there; flushed, its
    files agree and its journal rows have no gap."""
    with Memory.open(url, group=tenant, **MODES[mode]) as memory:
        missing = memory.workspace.missing()
        if missing:
            attempt.fail("corrupt", f"the layout misses {missing}")
        check(memory, expected, attempt)
        for problem in journal_problems(url, tenant, memory.status().lsn):
            attempt.fail("journal", f"before the flush: {problem}")
        memory.flush()
        for problem in file_problems(memory):
            attempt.fail("corrupt", problem)
        lsn = memory.status().lsn
        problems = journal_problems(url, tenant, lsn)
        if memory.status().journal_records:
            problems.append("records left in the journal after a flush")
    for problem in problems:
        attempt.fail("journal", f"after the flush: {problem}")


# -- many writers on one tenant ------------------------------------------------------


def run_writers(url: str, procs: int, writes: int, seed: int) -> Attack:
    """``procs`` processes x ``writes`` remember() on one fresh tenant (see the module)."""
    attack = Attack(f"postgres/writers {procs}x{writes}", seed=seed)
    tenant = f"writers-{uuid.uuid4().hex[:8]}"
    mark = new_mark("w")
    started = time.perf_counter()
    with attack.attempt(f"{procs} processes", seed) as attempt:
        lines, seconds = _write_together(url, tenant, mark, procs, writes, seed, attempt)
        attack.counts["write_seconds"] = round(seconds, 2)  # type: ignore[assignment]
        attack.counts["writes_per_second"] = round(procs * writes / seconds, 1)  # type: ignore[assignment]
        acked: dict[str, str] = {}
        for tag, data in acks(lines):
            if tag == "A":
                if data["put"] in acked:
                    attempt.fail("duplicated", f"id {data['put']} given twice")
                acked[data["put"]] = data["text"]
        attack.counts["acknowledged"] = len(acked)
        if len(acked) != procs * writes:
            attempt.fail("acknowledged", f"{len(acked)} acknowledged, not {procs * writes}")
        _check_writers(url, tenant, acked, procs * writes, attack, attempt)
    attack.seconds = time.perf_counter() - started
    return attack


def _write_together(
    url: str, tenant: str, mark: str, procs: int, writes: int, seed: int, attempt: Try
) -> tuple[list[str], float]:
    """Start the writers, release them at once, wait for all: their lines, the seconds."""
    rng = Random(seed)
    with ExitStack() as stack:
        children = []
        for _ in range(procs):
            child_seed = rng.randrange(2**32)
            command = child_command(url, tenant, "remember", mark, child_seed, writes, "ready")
            child = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_env(),
            )
            stack.enter_context(child)
            children.append(child)
        stack.callback(lambda: [c.kill() for c in children if c.poll() is None])
        for child in children:
            assert child.stdout is not None
            while child.stdout.readline() not in (b"ready\n", b""):
                pass  # "open" comes first
        started = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            child.stdin.close()
        lines: list[str] = []
        for child in children:
            assert child.stdout is not None and child.stderr is not None
            lines += child.stdout.read().decode().splitlines()
            err = child.stderr.read()
            if child.wait() != 0:
                attempt.fail("child_error", child_error(err, child.returncode)[0])
        seconds = time.perf_counter() - started
    return lines, seconds


def _check_writers(
    url: str, tenant: str, acked: dict[str, str], total: int, attack: Attack, attempt: Try
) -> None:
    for opening in ("first", "second"):  # the second: nothing left to repair
        with Memory.open(url, group=tenant, **MODES["remember"]) as memory:
            for notice in memory.notices:
                attempt.fail("notice", f"{opening} open said {notice!r}")
            items = memory.list()
            texts = Counter(item.text for item in items)
            attack.counts["present"] = len(items)
            if len({item.id for item in items}) < len(items):
                attempt.fail("duplicated", "an id is listed twice")
            if any(n > 1 for n in texts.values()):
                attempt.fail("duplicated", f"{sum(n > 1 for n in texts.values())} text(s) twice")
            live = {item.id: item.text for item in items}
            missing = [i for i, text in acked.items() if live.get(i) != text]
            attempt.lose(len(missing), f"acknowledged facts {missing[:3]}")
            if len(items) != total:
                attempt.fail("count", f"{len(items)} facts, not {total}")
            status = memory.status()
            if status.lsn != total:
                attempt.fail("journal", f"lsn {status.lsn} after {total} writes")
            for problem in journal_problems(url, tenant, status.lsn):
                attempt.fail("journal", problem)
            memory.flush()
            for problem in file_problems(memory):
                attempt.fail("corrupt", problem)
            _check_audit(memory, total, attempt)


def _check_audit(memory: Memory, total: int, attempt: Try) -> None:
    """Every lsn 1..total in the audit log once, each putting one fact."""
    import json

    data = memory.workspace.volume.read("memory/LTM_AUDIT.jsonl") or b""
    records = [json.loads(line) for line in data.splitlines()]
    lsns = [record["lsn"] for record in records]
    if lsns != list(range(1, total + 1)):
        attempt.fail("journal", f"audit lsns are not 1..{total}: {len(lsns)} records")
    ids = [item["id"] for record in records for item in record.get("items", [])]
    if len(ids) != total or len(set(ids)) != total:
        attempt.fail("duplicated", f"the audit log puts {len(ids)} ids ({len(set(ids))} distinct)")
