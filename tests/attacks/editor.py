"""Class 3: a person's editor saves MEMORY.md in place while the agent writes and checkpoints.

Each round is one save, as many editors make it: read MEMORY.md, wait a
random moment, truncate the file (``open(path, "w")``), wait a random moment,
write the text back with one new hand line (and sometimes one fact line
deleted, sometimes one fact line edited), then leave it alone a moment. The
agent meanwhile remembers facts and flushes. Rounds run in batches of 20 on a
fresh workspace; after a batch the last save is given time to settle (over
``SETTLE_SECONDS``), the agent flushes and closes, and the workspace is
reopened: no agent fact may be lost, every hand line must be a fact, every
hand edit must hold, and every hand deletion must be honoured and listed by
``Memory.forgotten()``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from memstrata import Memory
from memstrata.storage.quarantine import list_quarantine
from memstrata.stores.handedit import SETTLE_SECONDS

from .common import Attack, Progress, Try, file_problems, quiet, rounds, seed_for

BATCH = 20


@dataclass
class Save:
    """What one save did."""

    hand_line: str
    deleted: tuple[str, str] | None = None  # (id, text)
    edited: tuple[str, str] | None = None  # (id, new text)
    skipped: str | None = None  # why the save did not happen


@dataclass
class Agent:
    """The agent's acknowledged facts (shared with the editor thread)."""

    facts: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def known(self) -> dict[str, str]:
        with self.lock:
            return dict(self.facts)


def one_save(path: Path, label: str, agent: Agent, rng: Random, touched: set[str]) -> Save:
    """Read, truncate, write back with one hand line added (and maybe a line
    deleted or edited); ``touched`` ids are not deleted or edited again."""
    save = Save(f"hand line {label} {rng.randrange(16**6):06x}")
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    facts = agent.known()
    candidates = [
        (n, item_id)
        for n, line in enumerate(lines)
        for item_id in [line.rsplit("^", 1)[-1].strip()]
        if line.startswith("- ") and "^" in line and item_id in facts and item_id not in touched
    ]
    heading = next((n for n, line in enumerate(lines) if line == "## Facts"), None)
    if heading is None:
        heading = next((n for n, line in enumerate(lines) if line.startswith("## ")), len(lines))
    choice = rng.random()
    if candidates and choice < 0.2:
        number, item_id = rng.choice(candidates)
        save.deleted = (item_id, facts[item_id])
        touched.add(item_id)
        del lines[number]
        heading -= 1 if number < heading else 0
    elif candidates and choice < 0.4:
        number, item_id = rng.choice(candidates)
        new_text = f"{facts[item_id]} edited by hand {label}"
        save.edited = (item_id, new_text)
        touched.add(item_id)
        lines[number] = f"- {new_text} ^{item_id}"
    if heading >= len(lines) or not lines[heading].startswith("## "):
        lines[heading:heading] = ["## Facts"]
    lines.insert(heading + 1, f"- {save.hand_line}")
    time.sleep(rng.uniform(0.0, 0.05))
    with open(path, "w", encoding="utf-8") as out:  # truncate ...
        out.flush()
        time.sleep(rng.uniform(0.0, 0.1))
        out.write("\n".join(lines))  # ... then write
    time.sleep(rng.uniform(0.05, 0.45))  # the person reads on before the next save
    return save


def batch(ws: Path, count: int, rng: Random, label: str) -> tuple[Agent, list[Save], Memory]:
    """One batch of ``count`` saves while the agent writes; returns the open agent."""
    agent = Agent()
    memory = Memory.open(ws, embedder="none", checkpoint_interval_seconds=0)
    for i in range(30):
        item = memory.remember(f"seed fact {label}-{i}")
        agent.facts[item.id] = item.text
    memory.flush()
    saves: list[Save] = []
    stop = threading.Event()
    editor_rng = Random(rng.randrange(2**32))
    failed: list[BaseException] = []

    def editor() -> None:
        touched: set[str] = set()
        try:
            for n in range(count):
                saves.append(one_save(ws / "MEMORY.md", f"{label}-{n}", agent, editor_rng, touched))
        except BaseException as exc:  # reported by the caller
            failed.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=editor)
    thread.start()
    i = 0
    try:
        while not stop.is_set():
            item = memory.remember(f"agent fact {label}-{i}")
            with agent.lock:
                agent.facts[item.id] = item.text
            i += 1
            if rng.random() < 0.3:
                memory.flush()
            time.sleep(rng.uniform(0.0, 0.03))
    finally:
        stop.set()
        thread.join()
    if failed:
        raise failed[0]
    return agent, saves, memory


def check(ws: Path, agent: Agent, saves: list[Save], attempts: list[Try]) -> None:
    """Judge each save on its own try; what the agent lost goes on the batch's first."""
    with Memory.open(ws, embedder="none") as memory:
        live = {item.id: item.text for item in memory.list()}
        forgotten = {entry.item.id for entry in memory.forgotten()}
    texts = Counter(live.values())
    deleted = {s.deleted[0] for s in saves if s.deleted}
    first = attempts[0]
    for problem in file_problems(ws):
        first.fail("corrupt", problem)
    damaged = [
        e for e in list_quarantine(ws / ".memstrata" / "quarantine") if "damaged" in e.reason
    ]
    if damaged:
        first.fail("set_aside", f"{len(damaged)} save(s) set aside as damage: {damaged[0].reason}")
    lost = [t for k, t in agent.facts.items() if k not in deleted and k not in live]
    first.lose(len(lost), f"agent facts {lost[:3]}")
    twice = [text for text, n in texts.items() if n > 1]
    if twice:
        first.fail("duplicated", f"{len(twice)} text(s) live twice, e.g. {twice[:2]}")
    for save, attempt in zip(saves, attempts, strict=True):
        if not texts[save.hand_line]:
            attempt.lose(1, f"hand line {save.hand_line!r}")
        if save.deleted:
            item_id, text = save.deleted
            if item_id in live:
                attempt.fail("deletion_ignored", f"deleted by hand but live: {text!r}")
            elif item_id not in forgotten:
                attempt.fail("unrestorable", f"deleted by hand, not in forgotten(): {text!r}")
        if save.edited:
            item_id, text = save.edited
            if item_id in live and live[item_id] != text:
                attempt.lose(1, f"hand edit of {item_id}: {live[item_id]!r} instead of {text!r}")
            elif item_id not in live and not texts[text]:
                attempt.lose(1, f"the fact edited by hand ({text!r}) is gone")


def run_saves(base: Path, total: int, seed: int, say: Progress = quiet) -> Attack:
    """``total`` saves, in batches of ``BATCH`` on fresh workspaces."""
    attack = Attack("editor/in-place saves", seed=seed)
    rng = Random(seed)
    started = time.perf_counter()
    for number, first in enumerate(range(0, total, BATCH)):
        count = min(BATCH, total - first)
        batch_seed = rng.randrange(2**32)
        ws = base / f"editor-{number}"
        attempts = [attack.attempt(f"batch {number} save {n}", batch_seed) for n in range(count)]
        try:
            agent, saves, memory = batch(ws, count, Random(batch_seed), str(number))
            time.sleep(2 * SETTLE_SECONDS + 0.1)  # the last save settles
            memory.flush()
            notices = memory.notices
            memory.close()
            check(ws, agent, saves, attempts)
            attack.counts["hand_deletes"] += sum(1 for save in saves if save.deleted)
            attack.counts["hand_edits"] += sum(1 for save in saves if save.edited)
            attack.counts["rescued_saves"] += sum("while it was rewritten" in n for n in notices)
        except Exception as exc:  # noqa: BLE001 - counted, and the campaign goes on
            attempts[0].exception(exc, "the batch", kind="aborted")
            for attempt in attempts[1:]:
                attempt.fail("aborted", "the batch failed")
        for attempt in attempts:
            attempt.__exit__(None, None, None)
        say(f"editor batch {number}: {attack.passed}/{attack.tries} passed, {attack.lost} lost")
    attack.seconds = time.perf_counter() - started
    return attack


def run(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 3: ``200 * scale`` saves (the issue's bar: 200, nothing lost)."""
    return [run_saves(base, rounds(200, scale, least=2), seed_for(seed, "editor"), say)]
