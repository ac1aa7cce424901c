"""Class 2: several processes, and several threads on one ``Memory``, writing
and searching one workspace at once.

Every worker mixes remember (its own facts, and facts every worker says, which
must be stored once), forget, ``edit_file`` (its own document and one all of
them append to), ``record_turn`` (its own session) and searches (for a fact it
wrote itself, which must be found). Afterwards the workspace is reopened and
every acknowledged write is checked; any exception a search raised is counted
(``search_errors``), as is any a write raised (``write_errors``), and texts
or lines stored twice (``duplicated``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from memstrata import Memory

from .common import (
    Attack,
    Progress,
    Try,
    child_env,
    describe,
    file_problems,
    is_raw,
    python,
    rounds,
    seed_for,
)

SHARED_DOC = "memory/shared.md"
SHARED_FACTS = 8

# argv: tests folder, workspace, worker name, ops, seed, embedder. Says "open",
# waits for a line on stdin (so that every worker starts at once), works.
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from memstrata import Memory
from attacks.mixes import work

memory = Memory.open(sys.argv[2], embedder=sys.argv[6])
print("open", flush=True)
sys.stdin.readline()
work(memory, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), lambda line: print(line, flush=True))
memory.close()
print("done", flush=True)
"""


def work(memory: Memory, name: str, ops: int, seed: int, say: Callable[[str], None]) -> None:
    """``ops`` random calls on ``memory``; ``A {json}`` after each returned,
    ``E {json}`` for each that raised."""
    rng = Random(seed)
    mine: list[str] = []
    last_id = last_text = None

    def ack(**data: Any) -> None:
        say("A " + json.dumps(data, ensure_ascii=False))

    for i in range(ops):
        op = rng.choice(
            ["remember", "remember", "shared", "forget", "doc", "shared_doc", "turn", "search"]
        )
        try:
            if op == "remember" or (op == "forget" and not mine):
                item = memory.remember(f"{name} fact {i} code{rng.randrange(16**8):08x}")
                mine.append(item.id)
                last_id, last_text = item.id, item.text
                ack(put=item.id, text=item.text)
            elif op == "shared":
                item = memory.remember(f"shared fact {rng.randrange(SHARED_FACTS)}")
                ack(shared=item.text)
            elif op == "forget":
                gone = mine.pop(rng.randrange(len(mine)))
                memory.forget(gone)
                last_text = None if gone == last_id else last_text
                ack(forgot=gone)
            elif op in ("doc", "shared_doc"):
                path = SHARED_DOC if op == "shared_doc" else f"memory/{name}.md"
                line = f"{name} line {i}"
                memory.documents.edit_file(path, _appending(line))
                ack(doc=path, line=line)
            elif op == "turn":
                turn = memory.record_turn(name, user=f"{name} says {i}", assistant="ok")
                ack(turn=turn.text_of("user"), seq=turn.seq, session=name)
            else:
                query = last_text or "shared fact"
                hits = memory.search(query, k=10)
                found = last_text is None or any(hit.text == last_text for hit in hits)
                ack(searched=query, found=found)
        except Exception as exc:  # noqa: BLE001 - every exception is a finding here
            say("E " + json.dumps({"op": op, "raw": is_raw(exc), "error": describe(exc)}))


def _appending(line: str) -> Callable[[str | None], str]:
    return lambda text: (text or "# doc\n") + line + "\n"


@dataclass
class Outcome:
    """What the workers acknowledged (and what raised)."""

    live: dict[str, str] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    shared: set[str] = field(default_factory=set)
    lines: dict[str, list[str]] = field(default_factory=dict)  # path -> lines appended
    turns: dict[str, dict[str, int]] = field(default_factory=dict)  # session -> text -> seq
    errors: list[dict[str, Any]] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def take(self, line: str) -> None:
        tag, _, payload = line.partition(" ")
        if tag not in ("A", "E") or not payload.startswith("{"):
            return
        data = json.loads(payload)
        if tag == "E":
            self.errors.append(data)
        elif "put" in data:
            self.live[data["put"]] = data["text"]
        elif "forgot" in data:
            self.live.pop(data["forgot"], None)
            self.gone.add(data["forgot"])
        elif "shared" in data:
            self.shared.add(data["shared"])
        elif "doc" in data:
            self.lines.setdefault(data["doc"], []).append(data["line"])
        elif "turn" in data:
            self.turns.setdefault(data["session"], {})[data["turn"]] = data["seq"]
        elif "searched" in data and not data["found"]:
            self.misses.append(data["searched"])


def check(ws: Path, outcome: Outcome, attempt: Try) -> None:
    for error in outcome.errors:
        kind = "search_errors" if error["op"] == "search" else "write_errors"
        if error["raw"]:
            attempt.raw(f"{error['op']}: {error['error']}")
            attempt.attack.counts[kind] += 1
        else:
            attempt.fail(kind, f"{error['op']}: {error['error']}")
    for query in outcome.misses[:3]:
        attempt.fail("search_misses", f"search({query!r}) missed what its worker just wrote")
    for problem in file_problems(ws):
        attempt.fail("corrupt", problem)
    with Memory.open(ws, embedder="none") as memory:
        live = {item.id: item.text for item in memory.list()}
        turns = {s: memory.sessions.turns(s) for s in outcome.turns}
    missing = [k for k in outcome.live if live.get(k) != outcome.live[k]]
    attempt.lose(len(missing), f"facts {[outcome.live[k] for k in missing[:3]]}")
    undone = sorted(outcome.gone & live.keys())
    if undone:
        attempt.fail("undone", f"{len(undone)} forgets undone: {undone[:3]}")
    texts = Counter(live.values())
    attempt.lose(len(outcome.shared - texts.keys()), "shared facts")
    twice = [text for text, n in texts.items() if n > 1]
    if twice:
        attempt.fail("duplicated", f"{len(twice)} text(s) live twice, e.g. {twice[:2]}")
    for path, appended in outcome.lines.items():
        there = Counter((ws / path).read_text().splitlines()) if (ws / path).exists() else Counter()
        absent = [line for line in appended if not there[line]]
        attempt.lose(len(absent), f"{path} lines {absent[:3]}")
        doubled = [line for line in appended if there[line] > 1]
        if doubled:
            attempt.fail("duplicated", f"{path}: {len(doubled)} line(s) twice")
    for session, said in outcome.turns.items():
        recorded = {turn.text_of("user"): turn.seq for turn in turns[session]}
        absent = [text for text in said if text not in recorded]
        attempt.lose(len(absent), f"turns of {session}: {absent[:3]}")
        seqs = sorted(recorded.values())
        if seqs != list(range(1, len(seqs) + 1)) or len(turns[session]) != len(recorded):
            attempt.fail("seq", f"{session}: seqs are not 1..n without gaps or repeats")


def process_round(ws: Path, workers: int, ops: int, rng: Random, embedder: str) -> Outcome:
    """``workers`` processes released together on one workspace."""
    outcome = Outcome()
    tests = str(Path(__file__).resolve().parent.parent)
    with ExitStack() as stack:
        procs = []
        for n in range(workers):
            args = [tests, str(ws), f"p{n}", str(ops), str(rng.randrange(2**32)), embedder]
            procs.append(
                stack.enter_context(
                    subprocess.Popen(
                        [python(), "-c", CHILD, *args],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        env=child_env(),
                    )
                )
            )
        for proc in procs:
            stack.callback(proc.kill)  # harmless once it ended
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()  # "open" (or nothing when it failed: seen below)
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
            proc.stdin = None  # so that communicate() does not flush it
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            for line in out.splitlines():
                outcome.take(line)
            if proc.returncode != 0:
                raw = "X raw" in err or "memstrata.errors" not in err
                outcome.errors.append({"op": "worker", "raw": raw, "error": err.strip()[-400:]})
    return outcome


def thread_round(ws: Path, workers: int, ops: int, rng: Random, embedder: str) -> Outcome:
    """``workers`` threads sharing one ``Memory``."""
    outcome = Outcome()
    lines: list[str] = []
    seeds = [rng.randrange(2**32) for _ in range(workers)]
    with Memory.open(ws, embedder=embedder) as memory:
        start = threading.Barrier(workers)

        def run(n: int) -> None:
            start.wait()
            work(memory, f"t{n}", ops, seeds[n], lines.append)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    for line in lines:
        outcome.take(line)
    return outcome


ROUNDS: dict[str, tuple[Callable[[Path, int, int, Random, str], Outcome], int, int]] = {
    # name: (one round, workers, calls per worker)
    "mix/4 processes": (process_round, 4, 300),  # the bar of issue 13: 4 x 300, 5 runs
    "mix/8 threads": (thread_round, 8, 100),
}


def run_mix(
    base: Path, name: str, count: int, seed: int, *, ops: int | None = None, minilm: bool = True
) -> Attack:
    """``count`` rounds of mix ``name`` (``minilm``: every third, from the first, with
    the real default embedder)."""
    one_round, workers, default_ops = ROUNDS[name]
    attack = Attack(name, seed=seed)
    rng = Random(seed)
    started = time.perf_counter()
    for number in range(count):
        round_seed = rng.randrange(2**32)
        embedder = "minilm" if minilm and number % 3 == 0 else "none"
        ws = base / f"{name.split('/')[1].replace(' ', '-')}-{number}"
        with attack.attempt(f"round {number} ({embedder})", round_seed) as attempt:
            outcome = one_round(ws, workers, ops or default_ops, Random(round_seed), embedder)
            attack.counts["acknowledged"] += len(outcome.live) + len(outcome.shared)
            check(ws, outcome, attempt)
    attack.seconds = time.perf_counter() - started
    return attack


def run(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 2: ``5 * scale`` rounds of 4 processes and of 8 threads."""
    results = []
    for name in ROUNDS:
        attack = run_mix(base, name, rounds(5, scale), seed_for(seed, name))
        say(f"{name}: {attack.passed}/{attack.tries} passed, {attack.lost} lost")
        results.append(attack)
    return results


if __name__ == "__main__":  # pragma: no cover - a worker can also be run by hand
    sys.exit("run bench/reliability.py --only mix")
