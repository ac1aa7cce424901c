"""Class 1: SIGKILL during every kind of write.

A child opens the workspace and writes in a loop: ``B {json}`` says a call is
about to start, ``A {json}`` that it returned (an acknowledgement). The parent
kills it at a random instant, then checks the files (``doctor`` has no error,
MEMORY.md and the snapshot parse), reopens the workspace and checks that every
acknowledged write is there: facts by id and text, forgets not undone (and
listed by ``forgotten``), supersedes kept, restores kept, turns at their seq
(transcript or archive), documents with their exact content, observed
messages in SESSION-STATE.md. A call that had begun but not returned may have
happened or not; the parent then reads which, and expects that from then on.
Rounds of one kind share a workspace, so later kills land in what earlier
kills left.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from memstrata import Memory
from memstrata.stores.transcripts import archive_rel, read_turns, read_turns_at

from .common import (
    CHILD_EPILOGUE,
    Attack,
    Progress,
    Try,
    acks,
    file_problems,
    kill_child,
    python,
    rounds,
    seed_for,
)

# argv: workspace, kind, embedder, seed.
CHILD = (
    r"""
import json, os, random, sys
from memstrata import Memory
from memstrata.tools.memory_tool import MemoryToolHandler
"""
    + CHILD_EPILOGUE
    + r"""
ws, kind, embedder, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(seed)
pid = os.getpid()
SETTINGS = {
    "checkpoint": {"checkpoint_every_updates": 3},
    "observe": {"session_state_max_chars": 10_000_000},
    "record_turn": {"session_max_turns": 30, "session_keep_turns": 10},
}
def say(tag, **data):
    print(tag, json.dumps(data, ensure_ascii=False), flush=True)

class Refused(Exception):
    pass

def remember(i):
    text = f"fact {pid}-{i} {'x' * (1 + i % 30)}"
    item = memory.remember(text, sync=rng.random() < 0.7)
    say("A", put=item.id, text=item.text)
    return item

def observe(i):
    text = f"Remember that item {pid}-{i} is ready"
    memory.observe(text, session="obs")
    say("A", observed=text, session="obs")

def record_turn(i):
    tag = f"{pid}-{i}"
    turn = memory.record_turn(
        "kill", user=f"turn {tag}", assistant=f"answer {tag}", reasoning=f"thinking {tag}",
        tool_calls=[{"name": "lookup", "arguments": {"q": tag}}],
        tool_results=[{"content": {"rows": [tag]}}],
    )
    say("A", turn=f"turn {tag}", seq=turn.seq, session="kill", arg=tag)

docs = {}
def memory_tool(i):
    ops = ["create"] + (["str_replace", "insert", "delete", "rename", "edit_file"] if docs else [])
    op = rng.choice(ops)
    if op == "create":
        path = f"memory/doc-{pid}-{i}.md"
        after = f"# doc {pid}-{i}\nstate: 0\n"
        command = {"command": "create", "path": "/memories/" + path, "file_text": after}
    else:
        path = rng.choice(sorted(docs))
        text = docs[path]
    if op == "str_replace":
        state = [line for line in text.split("\n") if line.startswith("state: ")][0]
        new = f"state: {int(state.split()[1]) + 1}"
        after = text.replace(state, new)
        command = {"command": "str_replace", "path": "/memories/" + path,
                   "old_str": state, "new_str": new}
    elif op == "insert":
        lines = text[:-1].split("\n")
        at = rng.randint(0, len(lines))
        lines.insert(at, f"inserted {i}")
        after = "\n".join(lines) + "\n"
        command = {"command": "insert", "path": "/memories/" + path,
                   "insert_line": at, "insert_text": f"inserted {i}"}
    elif op == "delete":
        after = None
        command = {"command": "delete", "path": "/memories/" + path}
    elif op == "rename":
        new_path = f"memory/doc-{pid}-{i}-renamed.md"
        say("B", doc=new_path, after=text, source=path)
        answer = handler.handle({"command": "rename", "old_path": "/memories/" + path,
                                 "new_path": "/memories/" + new_path})
        if answer.startswith("Error"):
            raise Refused(answer)
        docs[new_path] = docs.pop(path)
        say("A", doc=new_path, after=text, source=path)
        return
    elif op == "edit_file":
        after = text + f"appended {i}\n"
        say("B", doc=path, after=after)
        memory.documents.edit_file(path, lambda old: old + f"appended {i}\n")
        docs[path] = after
        say("A", doc=path, after=after)
        return
    say("B", doc=path, after=after)
    answer = handler.handle(command)
    if answer.startswith("Error"):
        raise Refused(answer)
    if after is None:
        docs.pop(path)
    else:
        docs[path] = after
    say("A", doc=path, after=after)

def supersede(i):
    item = remember(i)
    say("B", retire=item.id)
    new = memory.supersede(item.id, f"claim {pid}-{i} corrected")
    say("A", put=new.id, text=new.text, retired=item.id)

kept = []
def forget(i):
    kept.append(remember(i))
    if i % 2 == 1:
        gone = kept.pop(rng.randrange(len(kept)))
        say("B", forget=gone.id)
        memory.forget(gone.id)
        say("A", forgot=gone.id)

def restore(i):
    item = remember(i)
    say("B", forget=item.id)
    memory.forget(item.id)
    say("A", forgot=item.id)
    if rng.random() < 0.7:
        say("B", restore=item.id)
        back = memory.restore(item.id)
        say("A", put=back.id, text=back.text, restored=True)

def checkpoint(i):
    remember(i)
    if i % 4 == 3:
        memory.flush()
        say("A", flushed=True)

def search(i):
    item = remember(i)
    hits = memory.search(item.text)
    say("A", searched=item.text, hits=len(hits))
    if i % 4 == 3:
        memory.reindex(full=rng.random() < 0.3)
        say("A", reindexed=True)

STEP = {"remember": remember, "observe": observe, "record_turn": record_turn,
        "memory_tool": memory_tool, "supersede": supersede, "forget": forget,
        "restore": restore, "checkpoint": checkpoint, "search": search}
try:
    memory = Memory.open(ws, embedder=embedder, **SETTINGS.get(kind, {}))
    handler = MemoryToolHandler(memory)
    print("open", flush=True)
    for i in range(100_000):
        STEP[kind](i)
except BaseException as exc:
    _report(exc)
    sys.exit(3)
"""
)

KINDS = (
    "remember",
    "observe",
    "record_turn",
    "memory_tool",
    "supersede",
    "forget",
    "restore",
    "checkpoint",
    "search",
)


@dataclass
class Expected:
    """What must be in the workspace after every round of one kind."""

    live: dict[str, str] = field(default_factory=dict)  # id -> text
    gone: set[str] = field(default_factory=set)  # forgotten: not live, listed by forgotten()
    retired: set[str] = field(default_factory=set)  # superseded: not live
    texts: set[str] = field(default_factory=set)  # observed: a live fact says it
    state: set[str] = field(default_factory=set)  # observed: in SESSION-STATE.md
    turns: dict[str, int] = field(default_factory=dict)  # user text -> seq
    docs: dict[str, str | None] = field(default_factory=dict)  # path -> text (None: deleted)
    unsure_ids: set[str] = field(default_factory=set)
    unsure_docs: set[str] = field(default_factory=set)
    probe: str | None = None  # the last fact written by a searching child

    def take(self, lines: list[str]) -> None:
        """Apply one child's acknowledgements; a call begun but not returned is unsure."""
        pending: dict[str, Any] | None = None
        for tag, data in acks(lines):
            if tag == "B":
                pending = data
                continue
            pending = None
            self._acknowledged(data)
        if pending is not None:
            for key in ("retire", "forget", "restore"):
                if key in pending:
                    self.unsure_ids.add(pending[key])
            if "doc" in pending:
                self.unsure_docs.add(pending["doc"])
                if "source" in pending:
                    self.unsure_docs.add(pending["source"])

    def _acknowledged(self, data: dict[str, Any]) -> None:
        if "put" in data:
            self.live[data["put"]] = data["text"]
            self.gone.discard(data["put"])
            if "retired" in data:
                self.live.pop(data["retired"], None)
                self.retired.add(data["retired"])
        elif "forgot" in data:
            self.live.pop(data["forgot"], None)
            self.gone.add(data["forgot"])
        elif "observed" in data:
            self.texts.add(data["observed"])
            self.state.add(data["observed"])
        elif "turn" in data:
            self.turns[data["turn"]] = data["seq"]
        elif "doc" in data:
            self.docs[data["doc"]] = data["after"]
            if "source" in data:
                self.docs[data["source"]] = None
        elif "searched" in data:
            self.probe = data["searched"]


def check(ws: Path, kind: str, expected: Expected, attempt: Try) -> None:
    """Everything acknowledged is there; unsure calls are resolved to what happened."""
    for problem in file_problems(ws):
        attempt.fail("corrupt", problem)
    with Memory.open(ws, embedder="none") as memory:
        live = {item.id: item.text for item in memory.list()}
        forgotten = {entry.item.id for entry in memory.forgotten()}
        notices = [n for n in memory.notices if "torn" not in n]
        state = [e.text for e in memory.session_state("obs")] if kind == "observe" else []
        hits = memory.search(expected.probe, k=5) if kind == "search" and expected.probe else None
    for notice in notices:
        attempt.fail("notice", f"open said {notice!r}")
    _check_facts(live, forgotten, expected, attempt)
    if kind == "observe":
        _check_observed(live, state, expected, attempt)
    if kind == "record_turn":
        _check_turns(ws, expected, attempt)
    if kind == "memory_tool":
        _check_docs(ws, expected, attempt)
    if hits is not None and not any(hit.text == expected.probe for hit in hits):
        attempt.fail("stale_index", f"search({expected.probe!r}) does not find it")
    # Unsure calls: from now on expect what happened.
    for item_id in expected.unsure_ids:
        if item_id in live:
            expected.live[item_id] = live[item_id]
            expected.gone.discard(item_id)
            expected.retired.discard(item_id)
        else:
            expected.live.pop(item_id, None)
            (expected.gone if item_id in forgotten else expected.retired).add(item_id)
    expected.unsure_ids.clear()
    for path in expected.unsure_docs:
        target = ws / path
        expected.docs[path] = target.read_text() if target.exists() else None
    expected.unsure_docs.clear()


def _check_facts(
    live: dict[str, str], forgotten: set[str], expected: Expected, attempt: Try
) -> None:
    sure = {k: v for k, v in expected.live.items() if k not in expected.unsure_ids}
    missing = sorted(k for k in sure if k not in live)
    attempt.lose(len(missing), f"acknowledged facts {[sure[k] for k in missing[:3]]}")
    changed = sorted(k for k in sure if k in live and live[k] != sure[k])
    if changed:
        attempt.fail("changed", f"{len(changed)} fact(s) changed text, e.g. {changed[:3]}")
    undone = sorted(
        k for k in expected.gone | expected.retired if k in live and k not in expected.unsure_ids
    )
    if undone:
        attempt.fail("undone", f"{len(undone)} acknowledged forget/supersede undone: {undone[:3]}")
    unlisted = sorted(expected.gone - forgotten - live.keys() - expected.unsure_ids)
    if unlisted:
        attempt.fail("unrestorable", f"forgotten() does not list {unlisted[:3]}")
    counts = Counter(live.values())
    twice = [text for text, n in counts.items() if n > 1]
    if twice:
        attempt.fail("duplicated", f"{len(twice)} text(s) live twice, e.g. {twice[:2]}")


def _check_observed(
    live: dict[str, str], state: list[str], expected: Expected, attempt: Try
) -> None:
    texts = set(live.values())
    missing = sorted(expected.texts - texts)
    attempt.lose(len(missing), f"observed facts {missing[:3]}")
    unlogged = sorted(expected.state - set(state))
    attempt.lose(len(unlogged), f"SESSION-STATE.md entries {unlogged[:3]}")
    twice = [text for text, n in Counter(state).items() if n > 1 and text in expected.state]
    if twice:
        attempt.fail("duplicated", f"{len(twice)} SESSION-STATE.md entries twice: {twice[:2]}")


def _check_turns(ws: Path, expected: Expected, attempt: Try) -> None:
    from memstrata.storage.workspace import Workspace

    workspace = Workspace.locate(ws)
    turns = read_turns(workspace, "kill", archived=True)
    ids = [turn.id for turn in read_turns_at(workspace.volume, archive_rel("kill"))]
    if len(set(ids)) < len(ids):
        attempt.fail("duplicated", f"{len(ids) - len(set(ids))} turn(s) archived twice")
    said = {turn.text_of("user"): turn for turn in turns}
    missing = sorted(t for t in expected.turns if t not in said)
    attempt.lose(len(missing), f"acknowledged turns {missing[:3]}")
    moved = [t for t, seq in expected.turns.items() if t in said and said[t].seq != seq]
    if moved:
        attempt.fail("changed", f"{len(moved)} turn(s) changed seq: {moved[:3]}")
    seqs = sorted(turn.seq for turn in turns)
    if seqs != list(range(1, len(seqs) + 1)):
        repeats = sorted(seq for seq, n in Counter(seqs).items() if n > 1)
        gaps = sorted(set(range(1, max(seqs) + 1)) - set(seqs))
        attempt.fail(
            "seq",
            f"seqs are not 1..{len(seqs)}: repeated {repeats[:5]}, missing {gaps[:5]}",
        )
    for text in expected.turns:
        turn = said.get(text)
        if turn is None:
            continue
        calls = [p for m in turn.messages for p in m["parts"] if p["type"] == "tool_call"]
        if not calls or calls[0].get("arguments") != {"q": text.removeprefix("turn ")}:
            attempt.fail("changed", f"the tool call of {text!r} is not as recorded")
            break


def _check_docs(ws: Path, expected: Expected, attempt: Try) -> None:
    for path, text in sorted(expected.docs.items()):
        if path in expected.unsure_docs:
            continue
        target = ws / path
        there = target.read_text() if target.exists() else None
        if there != text:
            if text is None:
                attempt.fail("undone", f"{path} was deleted but is back")
            else:
                attempt.lose(1, f"{path} holds {there!r:.80} instead of {text!r:.80}")


def run_kind(ws: Path, kind: str, count: int, seed: int, *, minilm: bool = True) -> Attack:
    """``count`` kills of a child writing ``kind`` on the workspace ``ws``
    (``minilm``: searching rounds use the real default embedder every third round)."""
    name = f"kill/{kind}"
    attack = Attack(name, seed=seed)
    rng = Random(seed)
    started = time.perf_counter()
    expected = Expected()
    for number in range(count):
        round_seed = rng.randrange(2**32)
        embedder = "minilm" if minilm and kind == "search" and number % 3 == 1 else "none"
        with attack.attempt(f"round {number} ({embedder})", round_seed) as attempt:
            command = [python(), "-c", CHILD, str(ws), kind, embedder, str(round_seed)]
            child = kill_child(command, Random(round_seed), acks=40, sleep=0.4)
            if child.error:
                if child.raw:
                    attempt.raw(f"the child: {child.error}")
                else:
                    attempt.fail("child_error", child.error)
            expected.take(child.lines)
            attack.counts["acknowledged"] += sum(1 for tag, _ in acks(child.lines) if tag == "A")
            if (ws / ".memstrata").exists():
                check(ws, kind, expected, attempt)
    attack.seconds = time.perf_counter() - started
    return attack


def run(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 1: one attack per kind of write, ``30 * scale`` kills each."""
    results = []
    for kind in KINDS:
        attack = run_kind(
            base / f"kill-{kind}", kind, rounds(30, scale, least=2), seed_for(seed, f"kill/{kind}")
        )
        say(f"{attack.name}: {attack.passed}/{attack.tries} passed, {attack.lost} lost")
        results.append(attack)
    return results
