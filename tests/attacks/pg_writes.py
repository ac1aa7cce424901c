"""The writer of the PostgreSQL campaigns, and what its acknowledgements promise.

A child process (``CHILD``, which runs ``child_main``) opens ``Memory`` on one
tenant and calls a mix of writes: ``remember`` (with and without ``sync``),
``forget``, ``observe``, ``record_turn``, notes, a core file, a semantic item,
``documents.edit_file`` and (mode ``compact``) ``compact``. It prints ``B
{json}`` before a call whose effect the parent must then find out (a forget,
a core write, a document edit) and ``A {json}`` after each call returned: an
acknowledgement. Every text holds the child's ``mark`` (one word), so a
campaign on two tenants can look for one tenant's words in the other.

In modes ``checkpoint`` and ``compact`` every file write made inside a
checkpoint or a compaction (and the journal's reset) is followed by a line
``M <phase> <call> <path>``; with the flag ``step`` the writer then waits
for a line on stdin: a parent that kills it instead kills it in the middle
of that checkpoint or compaction, its transaction open, whatever the
machine's speed.

``Expected`` takes the lines of every round and ``check`` holds an open
``Memory`` of the tenant to them: every acknowledged write there (facts by id
and text, turns at their seq, notes, files by content), nothing stored twice,
the files readable and agreeing with each other, the journal's rows without a
gap. A call begun but not acknowledged may have happened or not: ``check``
then expects from then on what it finds.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from random import Random
from typing import Any

from memstrata import Memory
from memstrata.errors import MemstrataError, NotFound
from memstrata.storage.workspace import template_bytes
from memstrata.stores import markdown
from memstrata.stores.core import rel as core_rel
from memstrata.stores.longterm import Snapshot
from memstrata.stores.transcripts import archive_rel, read_turns_at, transcript_rel

from .common import Try, acks

# argv: tests folder, then child_main's arguments.
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from attacks.pg_writes import child_main
sys.exit(child_main(sys.argv[2:]))
"""

SESSION = "kill"
OBSERVED = "obs"
CORE = "user"
SEMANTIC = "facts"

# Settings of each mode (the parent opens the tenant with the same). Session
# state is bounded by design (the oldest entries leave): not here, where every
# acknowledged entry is looked for.
_BASE = {"embedder": "none", "session_state_max_chars": 10_000_000}
MODES: dict[str, dict[str, Any]] = {
    "mix": {**_BASE, "checkpoint_every_updates": 40},
    "checkpoint": {**_BASE, "checkpoint_every_updates": 2},
    "compact": {**_BASE, "session_max_turns": 6, "session_keep_turns": 3},
    "remember": _BASE,
}
_MIX = ("remember", "remember", "forget", "observe", "turn", "turn", "note", "core", "doc")
OPS: dict[str, tuple[str, ...]] = {
    "mix": (*_MIX, "semantic", "search"),
    "checkpoint": (*_MIX, "semantic", "search"),
    "compact": (*_MIX, "turn", "compact"),
    "remember": ("remember",),
}


def doc_path(mark: str) -> str:
    return f"memory/doc-{mark}.md"


class Writer:
    """Calls one write after another on ``memory``, saying what it does."""

    def __init__(self, memory: Memory, mode: str, mark: str, seed: int, *, step: bool) -> None:
        self.memory = memory
        self.stepping = step  # wait for a line on stdin after each marker
        self.mark = mark
        self.rng = Random(seed)
        self.ops = OPS[mode]
        self.sync_always = mode == "remember"
        self.pid = os.getpid()
        self.kept: list[str] = []  # ids this process remembered and did not forget
        self.phase: list[str] = []  # "checkpoint" / "compact" while inside one

    def step(self, i: int) -> None:
        """Call write ``i``: each kind once first, then at random."""
        op = self.ops[i] if i < len(self.ops) else self.rng.choice(self.ops)
        getattr(self, f"_{op}")(i)

    def tag(self, i: int) -> str:
        return f"{self.mark} {self.pid}-{i}"

    # -- the writes ------------------------------------------------------------------

    def _remember(self, i: int) -> None:
        text = f"fact {self.tag(i)} {'x' * (1 + i % 30)}"
        sync = self.sync_always or self.rng.random() < 0.7
        item = self.memory.remember(text, sync=sync)
        self.kept.append(item.id)
        say("A", put=item.id, text=item.text)

    def _forget(self, i: int) -> None:
        if not self.kept:
            self._remember(i)
            return
        gone = self.kept.pop(self.rng.randrange(len(self.kept)))
        say("B", forget=gone)
        self.memory.forget(gone)
        say("A", forgot=gone)

    def _observe(self, i: int) -> None:
        text = f"Remember that item {self.tag(i)} is ready"
        self.memory.observe(text, session=OBSERVED)
        say("A", observed=text)

    def _turn(self, i: int) -> None:
        tag = self.tag(i)
        turn = self.memory.record_turn(
            SESSION,
            user=f"turn {tag}",
            assistant=f"answer {tag}",
            tool_calls=[{"name": "lookup", "arguments": {"q": tag}}],
        )
        say("A", turn=f"turn {tag}", seq=turn.seq)

    def _note(self, i: int) -> None:
        body = f"body {self.tag(i)}"
        note = self.memory.notes.create(f"note {self.tag(i)}", body)
        say("A", note=note.name, body=body)

    def _core(self, i: int) -> None:
        text = f"# User\n\nstate {self.tag(i)}\n"
        say("B", core=text)
        written = self.memory.core.write(CORE, text)
        say("A", core=written)

    def _doc(self, i: int) -> None:
        path, line = doc_path(self.mark), f"line {self.tag(i)}\n"
        say("B", doc=path, line=line)
        after = self.memory.documents.edit_file(path, lambda old: (old or "") + line)
        say("A", doc=path, after=after)

    def _semantic(self, i: int) -> None:
        added = self.memory.semantic.add(SEMANTIC, f"semantic {self.tag(i)}")
        if added is not None:
            say("A", semantic=added.text)

    def _search(self, i: int) -> None:
        """A search brings the shared index up to date (a kill may land in it)."""
        if not self.kept:
            self._remember(i)
            return
        text = self.memory.get(self.kept[-1]).text
        hits = self.memory.search(text, k=5)
        if i % 5 == 4:
            self.memory.reindex(full=self.rng.random() < 0.3)
        say("A", searched=text, hits=len(hits))

    def _compact(self, i: int) -> None:
        with self.inside("compact"):
            self.memory.compact()
            if self.memory.sessions.list() and self.rng.random() < 0.5:
                self.memory.sessions.compact(SESSION, keep=2)
        say("A", compacted=i)

    # -- markers ---------------------------------------------------------------------

    @contextlib.contextmanager
    def inside(self, phase: str) -> Iterator[None]:
        self.phase.append(phase)
        try:
            yield
        finally:
            self.phase.pop()

    def mark_phases(self) -> None:
        """Say ``M ...`` after each file write inside a checkpoint or compaction."""
        from memstrata.memory import sessions

        engine = self.memory.engine
        engine.checkpoint = self._within("checkpoint", engine.checkpoint)  # type: ignore[method-assign]
        sessions.compact = self._within("compact", sessions.compact)  # type: ignore[assignment]
        volume = engine.volume
        for name in ("write", "append", "rename", "delete", "swap"):
            setattr(volume, name, self._marked(name, getattr(volume, name)))
        journal = engine.journal
        journal.reset = self._marked("reset", journal.reset, before=True)  # type: ignore[method-assign]

    def _within(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with self.inside(phase):
                return function(*args, **kwargs)

        return run

    def _marked(
        self, name: str, function: Callable[..., Any], *, before: bool = False
    ) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            if before and self.phase:
                self._say_marker(name, args)
            result = function(*args, **kwargs)
            if not before and self.phase:
                self._say_marker(name, args)
            return result

        return run

    def _say_marker(self, name: str, args: tuple[Any, ...]) -> None:
        print(f"M {self.phase[0]} {name} {args[0] if args else ''}", flush=True)
        if self.stepping:
            sys.stdin.readline()


def say(tag: str, **data: Any) -> None:
    print(tag, json.dumps(data, ensure_ascii=False), flush=True)


def child_main(argv: list[str]) -> int:
    """argv: url, tenant, mode, mark, seed, ops, flag ("ready": say "ready"
    and wait for a line on stdin first; "step": wait for one after each
    marker; "survive": a call that fails with a ``MemstrataError`` is an
    ``E {json}`` line and the next one is made; "-": none of these). Says
    "open", writes, closes, says "done"."""
    url, tenant, mode, mark, seed, ops, flag = argv
    survive = flag == "survive"
    try:
        memory = _open(url, tenant, mode, tries=20 if survive else 1)
        writer = Writer(memory, mode, mark, int(seed), step=flag == "step")
        if mode in ("checkpoint", "compact"):
            writer.mark_phases()
        print("open", flush=True)
        if flag == "ready":
            print("ready", flush=True)
            sys.stdin.readline()
        for i in range(int(ops)):
            with _surviving(survive):
                writer.step(i)
        with _surviving(survive):
            memory.close()
        print("done", flush=True)
    except BaseException as exc:  # noqa: BLE001 - reported on the last stderr line
        traceback.print_exc()
        kind = "memstrata" if isinstance(exc, MemstrataError) else "raw"
        message = " ".join(str(exc).split())[:240]
        sys.stderr.write(f"\nX {kind} {type(exc).__module__}.{type(exc).__qualname__}: {message}\n")
        return 3
    return 0


def _open(url: str, tenant: str, mode: str, *, tries: int) -> Memory:
    for _ in range(tries - 1):
        with contextlib.suppress(MemstrataError):
            return Memory.open(url, group=tenant, **MODES[mode])
    return Memory.open(url, group=tenant, **MODES[mode])


@contextlib.contextmanager
def _surviving(survive: bool) -> Iterator[None]:
    """``survive``: a failed call is said (``E``), not raised."""
    try:
        yield
    except MemstrataError as exc:
        if not survive:
            raise
        say("E", error=f"{type(exc).__name__}: {exc}"[:300])


# -- what the acknowledgements promise -----------------------------------------------


@dataclass
class Expected:
    """What must be in one tenant after every round."""

    live: dict[str, str] = field(default_factory=dict)  # id -> text
    gone: set[str] = field(default_factory=set)  # forgotten ids
    observed: set[str] = field(default_factory=set)
    turns: dict[str, int] = field(default_factory=dict)  # user text -> seq
    notes: dict[str, str] = field(default_factory=dict)  # name -> body
    semantic: set[str] = field(default_factory=set)
    core: str | None = None  # None: nothing acknowledged yet (init's template)
    docs: dict[str, str | None] = field(default_factory=dict)
    unsure_ids: set[str] = field(default_factory=set)
    unsure_core: list[str] = field(default_factory=list)  # what a pending write would leave
    unsure_docs: dict[str, list[str]] = field(default_factory=dict)  # path -> pending lines
    writes: Counter[str] = field(default_factory=Counter)  # acknowledged, by kind
    last: dict[str, str] = field(default_factory=dict)  # layer -> the last text written there

    def take(self, lines: list[str]) -> None:
        """Apply one child's acknowledgements; a call begun but not returned
        (killed, or it raised: an ``E`` line) is unsure."""
        pending: dict[str, Any] | None = None
        for line in lines:
            if line.startswith("E ") and pending is not None:
                self._unsure(pending)
                pending = None
            for tag, data in acks([line]):
                if tag == "B":
                    pending = data
                else:
                    pending = None
                    self._acknowledged(data)
        if pending is not None:
            self._unsure(pending)

    def _unsure(self, pending: dict[str, Any]) -> None:
        if "forget" in pending:
            self.unsure_ids.add(pending["forget"])
        elif "core" in pending:
            self.unsure_core.append(pending["core"])
        elif "doc" in pending:
            self.unsure_docs.setdefault(pending["doc"], []).append(pending["line"])

    def _acknowledged(self, data: dict[str, Any]) -> None:
        kind = next(iter(data))
        self.writes[kind] += 1
        if kind == "put":
            self.live[data["put"]] = data["text"]
            self.last["long_term"] = data["text"]
        elif kind == "forgot":
            self.live.pop(data["forgot"], None)
            self.gone.add(data["forgot"])
            if self.last.get("long_term") not in self.live.values():
                self.last.pop("long_term", None)
        elif kind == "observed":
            self.observed.add(data["observed"])
        elif kind == "turn":
            self.turns[data["turn"]] = data["seq"]
            self.last["transcripts"] = data["turn"]
        elif kind == "note":
            self.notes[data["note"]] = data["body"]
            self.last["notebook"] = data["body"]
        elif kind == "semantic":
            self.semantic.add(data["semantic"])
        elif kind == "core":
            self.core = data["core"]
            self.unsure_core.clear()  # what the file holds now
        elif kind == "doc":
            self.docs[data["doc"]] = data["after"]
            self.unsure_docs.pop(data["doc"], None)


def check(memory: Memory, expected: Expected, attempt: Try) -> None:
    """Everything acknowledged is in ``memory`` (just opened), nothing twice;
    unsure calls are resolved to what happened."""
    for notice in memory.notices:
        attempt.fail("notice", f"open said {notice!r}")
    live = _check_facts(memory, expected, attempt)
    _check_observed(memory, live, expected, attempt)
    _check_turns(memory, expected, attempt)
    _check_notes(memory, expected, attempt)
    _check_files(memory, expected, attempt)
    _check_index(memory, live, expected, attempt)
    for item_id in expected.unsure_ids:
        if item_id in live:
            expected.live[item_id] = live[item_id]
        else:
            expected.live.pop(item_id, None)
            expected.gone.add(item_id)
    expected.unsure_ids.clear()


def _check_facts(memory: Memory, expected: Expected, attempt: Try) -> dict[str, str]:
    items = memory.list()
    live = {item.id: item.text for item in items}
    if len(live) < len(items):
        attempt.fail("duplicated", f"{len(items) - len(live)} id(s) listed twice")
    twice = [text for text, n in Counter(live.values()).items() if n > 1]
    if twice:
        attempt.fail("duplicated", f"{len(twice)} text(s) live twice, e.g. {twice[:2]}")
    sure = {k: v for k, v in expected.live.items() if k not in expected.unsure_ids}
    missing = sorted(k for k in sure if k not in live)
    attempt.lose(len(missing), f"acknowledged facts {[sure[k] for k in missing[:3]]}")
    changed = sorted(k for k in sure if k in live and live[k] != sure[k])
    if changed:
        attempt.fail("changed", f"{len(changed)} fact(s) changed text, e.g. {changed[:3]}")
    undone = sorted(k for k in expected.gone - expected.unsure_ids if k in live)
    if undone:
        attempt.fail("undone", f"{len(undone)} acknowledged forget(s) undone: {undone[:3]}")
    forgotten = {entry.item.id for entry in memory.forgotten()}
    unlisted = sorted(expected.gone - forgotten - live.keys())
    if unlisted:
        attempt.fail("unrestorable", f"forgotten() does not list {unlisted[:3]}")
    return live


def _check_observed(memory: Memory, live: dict[str, str], expected: Expected, attempt: Try) -> None:
    if not expected.observed:
        return
    missing = sorted(expected.observed - set(live.values()))
    attempt.lose(len(missing), f"observed facts {missing[:3]}")
    state = Counter(entry.text for entry in memory.session_state(OBSERVED))
    unlogged = sorted(text for text in expected.observed if not state[text])
    attempt.lose(len(unlogged), f"SESSION-STATE.md entries {unlogged[:3]}")
    twice = [text for text in expected.observed if state[text] > 1]
    if twice:
        attempt.fail("duplicated", f"{len(twice)} SESSION-STATE.md entries twice: {twice[:2]}")


def _check_turns(memory: Memory, expected: Expected, attempt: Try) -> None:
    if not expected.turns:
        return
    turns = memory.sessions.turns(SESSION, archived=True)
    said = {turn.text_of("user"): turn for turn in turns}
    missing = sorted(text for text in expected.turns if text not in said)
    attempt.lose(len(missing), f"acknowledged turns {missing[:3]}")
    moved = [t for t, seq in expected.turns.items() if t in said and said[t].seq != seq]
    if moved:
        attempt.fail("changed", f"{len(moved)} turn(s) changed seq: {moved[:3]}")
    seqs = sorted(turn.seq for turn in turns)
    if seqs != list(range(1, len(seqs) + 1)):
        attempt.fail("seq", f"seqs are not 1..{len(seqs)}: {seqs[:5]}...{seqs[-5:]}")
    volume = memory.workspace.volume
    kept = [turn.id for turn in read_turns_at(volume, transcript_rel(SESSION))]
    archived = [turn.id for turn in read_turns_at(volume, archive_rel(SESSION))]
    if len(set(archived)) < len(archived) or set(kept) & set(archived):
        # a compaction is one transaction: never half done, so never in both
        both = len(set(kept) & set(archived)) + len(archived) - len(set(archived))
        attempt.fail("duplicated", f"{both} turn(s) both archived and kept, or archived twice")


def _check_notes(memory: Memory, expected: Expected, attempt: Try) -> None:
    names = [note.name for note in memory.notes.list()]
    if len(set(names)) < len(names):
        attempt.fail("duplicated", "a note name is listed twice")
    lost = []
    for name, body in expected.notes.items():
        try:
            text = memory.notes.read(name)
        except NotFound:
            text = ""
        if body not in text:
            lost.append(name)
    attempt.lose(len(lost), f"acknowledged notes {lost[:3]}")
    if expected.semantic:
        texts = Counter(item.text for item in memory.semantic.read(SEMANTIC))
        missing = sorted(text for text in expected.semantic if not texts[text])
        attempt.lose(len(missing), f"semantic items {missing[:3]}")
        if any(texts[text] > 1 for text in expected.semantic):
            attempt.fail("duplicated", "a semantic item is there twice")


def _check_files(memory: Memory, expected: Expected, attempt: Try) -> None:
    """The core file and the documents hold what was acknowledged last (or
    what a pending call would have left)."""
    core = memory.core.read(CORE)
    before = expected.core
    if before is None:  # nothing acknowledged yet: the file holds what init wrote
        before = (template_bytes(core_rel(CORE)) or b"").decode()
    allowed = {before, *expected.unsure_core}
    if core not in allowed:
        attempt.lose(1, f"core/{CORE} holds {core!r:.80} instead of {before!r:.80}")
    if expected.unsure_core:
        expected.core = core
        expected.unsure_core.clear()
    volume = memory.workspace.volume
    for path in sorted(expected.docs.keys() | expected.unsure_docs.keys()):
        data = volume.read(path)
        there = None if data is None else data.decode()
        want = expected.docs.get(path)
        allowed_docs: set[str | None] = {want}
        for lines in _subsequences(expected.unsure_docs.pop(path, [])):
            allowed_docs.add((want or "") + "".join(lines))
        if there not in allowed_docs:
            attempt.lose(1, f"{path} holds {there!r:.80} instead of {want!r:.80}")
        expected.docs[path] = there


def _check_index(memory: Memory, live: dict[str, str], expected: Expected, attempt: Try) -> None:
    """Search finds the last fact, turn and note acknowledged (the index is
    shared by the tenant's processes: a writer killed while it indexed must
    not leave it behind)."""
    for layer, text in sorted(expected.last.items()):
        if layer == "long_term" and text not in live.values():
            continue  # forgotten (by a forget not acknowledged: a loss is counted above)
        hits = memory.search(text, k=10, layers=[layer])
        if not any(text in hit.text or text in hit.snippet for hit in hits):
            found = [hit.text[:60] for hit in hits[:3]]
            attempt.fail("stale_index", f"search({text!r}) in {layer} finds only {found}")


def _subsequences(lines: list[str]) -> list[list[str]]:
    """Every choice of ``lines`` in order (each pending edit done or not)."""
    found: list[list[str]] = [[]]
    for line in lines[-8:]:
        found += [[*before, line] for before in found]
    return found


# -- files and rows ------------------------------------------------------------------


def file_problems(memory: Memory) -> list[str]:
    """What is unreadable or disagrees in the tenant's files (read after a
    flush: MEMORY.md and the snapshot hold exactly the live facts)."""
    volume = memory.workspace.volume
    live = {item.id: item.text for item in memory.list()}
    bad = []
    parsed = markdown.parse(volume.read("MEMORY.md") or b"")
    if parsed.bad:
        bad.append(f"MEMORY.md: {len(parsed.bad)} undecodable line(s)")
    if {line.item_id: line.text for line in parsed.lines} != live:
        bad.append("MEMORY.md does not hold exactly the live facts")
    try:
        snapshot = Snapshot.decode(volume.read("memory/LTM_SNAPSHOT.json") or b"")
        if {i.id: i.text for i in snapshot.items.values() if i.is_live} != live:
            bad.append("the snapshot does not hold exactly the live facts")
    except MemstrataError as exc:
        bad.append(f"snapshot: {exc}")
    lsns = []
    for number, line in enumerate((volume.read("memory/LTM_AUDIT.jsonl") or b"").splitlines()):
        try:
            lsns.append(int(json.loads(line)["lsn"]))
        except (ValueError, KeyError, TypeError):
            bad.append(f"LTM_AUDIT.jsonl line {number + 1} is not a record")
            break
    if lsns != sorted(set(lsns)):
        bad.append("LTM_AUDIT.jsonl: lsns not strictly increasing")
    return bad


def journal_problems(url: str, tenant: str, lsn: int) -> list[str]:
    """The tenant's journal rows, read raw: lsns one after another above the
    base, the last the store's ``lsn``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (tenant,))
        state = conn.execute("SELECT base_lsn FROM memstrata_journal_state").fetchall()
        rows = [r[0] for r in conn.execute("SELECT lsn FROM memstrata_journal ORDER BY lsn")]
    if len(state) != 1:
        return [f"{len(state)} journal state rows"]
    base = int(state[0][0])
    bad = []
    if rows != list(range(base + 1, base + 1 + len(rows))):
        bad.append(f"journal rows are not {base + 1}..: {rows[:5]}...")
    last = rows[-1] if rows else base
    if last != lsn:
        bad.append(f"the journal ends at lsn {last}, the store is at {lsn}")
    return bad
