"""Transactions of the derived index: an error in one never breaks the next,
several processes on one index file never break search (issue 13, item 3)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import pytest

from memstrata import Conflict, Memory
from memstrata.index import sqlite as index_sqlite
from memstrata.index.chunks import Chunk
from memstrata.index.sqlite import FileState, Index, Stale

VEC = b"\x00\x00\x80\x3f" * 4  # a float32 vector


def chunks(path: str, *texts: str) -> list[Chunk]:
    return [Chunk(path, "semantic", n, n, text) for n, text in enumerate(texts, start=1)]


def mirror(index: Index) -> dict[str, Any]:
    """What the RAM mirror holds (to compare with a fresh load of the file)."""
    return {
        "chunks": dict(index.chunks),
        "files": dict(index.files),
        "vectors": dict(index.vectors),
        "unembedded": set(index.unembedded),
        "by_path": {path: set(ids) for path, ids in index._by_path.items() if ids},
        "by_ref": {key: set(ids) for key, ids in index._by_ref.items() if ids},
    }


def assert_mirrors_the_file(index: Index) -> None:
    fresh = Index(index.path)
    try:
        assert mirror(index) == mirror(fresh)
    finally:
        fresh.close()


def filled(path: Path) -> Index:
    index = Index(path)
    ids = index.replace(
        "semantic/a.md", chunks("semantic/a.md", "alpha", "beta"), FileState(1, 1, "a")
    )
    index.replace_refs(
        "MEMORY.md", ["f1"], [Chunk("MEMORY.md", "long_term", 0, 0, "gamma", ref="f1")]
    )
    index.set_vectors("m", dict.fromkeys(ids, VEC))
    return index


# -- one process -------------------------------------------------------------------------


class FailingDb:
    """A connection that raises ``KeyboardInterrupt`` at its ``fail_at``-th
    statement, once (a crash of the caller in the middle of a transaction)."""

    def __init__(self, db: sqlite3.Connection, fail_at: int) -> None:
        self.db, self.left, self.failed = db, fail_at, False

    def _tick(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.failed = True
            raise KeyboardInterrupt

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._tick()
        return self.db.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        self._tick()
        return self.db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


WRITES: dict[str, Callable[[Index], object]] = {
    "replace": lambda index: index.replace(
        "semantic/a.md", chunks("semantic/a.md", "delta", "epsilon"), FileState(2, 2, "b")
    ),
    "append": lambda index: index.replace(
        "semantic/a.md", chunks("semantic/a.md", "zeta"), FileState(3, 3, "c"), append=True
    ),
    "forget a file": lambda index: index.replace("semantic/a.md", [], None),
    "replace_refs": lambda index: index.replace_refs(
        "MEMORY.md", ["f1", "f2"], [Chunk("MEMORY.md", "long_term", 0, 0, "eta", ref="f2")]
    ),
    "set_vectors": lambda index: index.set_vectors("m", dict.fromkeys(index.chunks, VEC[::-1])),
    "another model": lambda index: index.set_vectors("n", dict.fromkeys(index.chunks, VEC)),
    "drop": lambda index: index.drop(),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_an_interrupted_write_rolls_back_and_the_index_stays_usable(
    tmp_path: Path, write: str
) -> None:
    for fail_at in range(1, 100):
        index = filled(tmp_path / f"{fail_at}.sqlite")
        before = mirror(index)
        failing = FailingDb(index._db, fail_at)
        index._db = failing  # type: ignore[assignment]
        try:
            WRITES[write](index)
        except KeyboardInterrupt:
            assert mirror(index) == before  # nothing of it, in RAM or in the file
            assert_mirrors_the_file(index)
        index._db = failing.db
        assert_mirrors_the_file(index)
        WRITES[write](index)  # the connection is usable: the same write passes now
        assert_mirrors_the_file(index)
        index.close()
        if not failing.failed:  # it ran to the end without reaching fail_at
            break
    else:
        pytest.fail("the write never finished")


def test_a_lock_held_too_long_is_a_conflict_then_the_write_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_sqlite, "BUSY_SECONDS", 0.05, raising=False)
    index = filled(tmp_path / "index.sqlite")
    before = mirror(index)
    with closing(sqlite3.connect(index.path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(Conflict, match="busy"):
            WRITES["replace"](index)
        assert mirror(index) == before
        other.execute("ROLLBACK")
    WRITES["replace"](index)
    assert_mirrors_the_file(index)
    index.close()


def test_opening_while_another_process_holds_the_file_never_deletes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_sqlite, "BUSY_SECONDS", 0.05, raising=False)
    path = tmp_path / "index.sqlite"
    filled(path).close()
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("PRAGMA journal_mode=DELETE")
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(Conflict, match="busy"):
            Index(path)
        other.execute("ROLLBACK")
    index = Index(path)
    assert not index.rebuilt
    assert sorted(chunk.text for chunk in index.chunks.values()) == ["alpha", "beta", "gamma"]
    index.close()


class _BusyAtOnce(sqlite3.Connection):
    """A connection whose first switches to WAL fail busy at once, without the
    busy handler, as SQLite does while another process closes or recovers the
    file's WAL (seen in the 4-process mix: a search failed opening the index)."""

    failures = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        if sql.startswith("PRAGMA journal_mode") and _BusyAtOnce.failures:
            _BusyAtOnce.failures -= 1
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            raise error
        return super().execute(sql, *args)


@pytest.mark.parametrize("fresh", [True, False])
def test_an_immediate_busy_while_opening_is_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    path = tmp_path / "index.sqlite"
    if not fresh:
        filled(path).close()
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: connect(*a, factory=_BusyAtOnce, **kw))
    _BusyAtOnce.failures = 3
    index = Index(path)
    assert _BusyAtOnce.failures == 0
    assert index.rebuilt is fresh  # the retry keeps what opening found
    assert len(index.chunks) == (0 if fresh else 3)
    index.close()


def test_a_busy_that_lasts_is_a_conflict_not_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_sqlite, "BUSY_SECONDS", 0.05, raising=False)
    path = tmp_path / "index.sqlite"
    filled(path).close()
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: connect(*a, factory=_BusyAtOnce, **kw))
    _BusyAtOnce.failures = 10**6
    with pytest.raises(Conflict, match="busy"):
        Index(path)
    _BusyAtOnce.failures = 0
    assert len(Index(path).chunks) == 3  # still there: never deleted


def test_an_index_damaged_while_open_is_rebuilt_by_the_next_search(ws: Path) -> None:
    with Memory.open(ws, embedder="hash") as memory:
        memory.remember("the harbour lanterns are blue")
        assert memory.search("harbour lanterns")
        index = ws / ".memstrata" / "index.sqlite"
        with closing(sqlite3.connect(index)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with index.open("r+b") as damaged:
            damaged.write(b"this is not a database" * 200)
        memory.remember("the harbour lanterns are green")
        found = [hit.text for hit in memory.search("harbour lanterns")]
        assert sorted(found) == ["the harbour lanterns are blue", "the harbour lanterns are green"]


def test_an_index_file_replaced_under_a_running_process_is_opened_again(ws: Path) -> None:
    with Memory.open(ws, embedder="hash") as memory:
        memory.remember("the harbour lanterns are blue")
        assert memory.search("harbour lanterns")
        index = ws / ".memstrata" / "index.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        memory.remember("the harbour lanterns are green")
        found = [hit.text for hit in memory.search("harbour lanterns")]
        assert sorted(found) == ["the harbour lanterns are blue", "the harbour lanterns are green"]
        assert index.exists()  # searches use (and fill) the file that is there now


# -- two connections on one file -----------------------------------------------------------


def test_vectors_for_chunks_another_process_deleted_are_skipped(tmp_path: Path) -> None:
    ours = filled(tmp_path / "index.sqlite")
    ids = list(ours.path_chunks("semantic/a.md"))
    cids = [cid for cid, chunk in ours.chunks.items() if chunk.path == "semantic/a.md"]
    theirs = Index(ours.path)
    theirs.replace("semantic/a.md", [], None)  # gone while we embedded them
    ours.set_vectors("m", dict.fromkeys(cids, VEC[::-1]))
    assert ids and not set(cids) & set(ours.chunks)
    assert_mirrors_the_file(ours)
    ours.replace("semantic/b.md", chunks("semantic/b.md", "theta"), FileState(4, 4, "d"))
    theirs.refresh()
    assert mirror(theirs) == mirror(ours)
    ours.close()
    theirs.close()


def test_a_chunk_id_used_again_by_another_process_gets_no_stale_vector(tmp_path: Path) -> None:
    ours = Index(tmp_path / "index.sqlite")
    (cid,) = ours.replace("semantic/a.md", chunks("semantic/a.md", "old"), FileState(1, 1, "a"))
    theirs = Index(ours.path)
    theirs.replace("semantic/a.md", [], None)
    (again,) = theirs.replace("semantic/b.md", chunks("semantic/b.md", "new"), FileState(1, 1, "b"))
    assert again == cid  # SQLite gives the highest rowid again
    ours.set_vectors("m", {cid: VEC})  # computed from "old"
    assert ours.chunks[cid].text == "new" and cid not in ours.vectors
    assert cid in ours.unembedded  # embedded again at the next sync
    assert_mirrors_the_file(ours)
    ours.close()
    theirs.close()


def test_writers_on_one_file_follow_each_other(tmp_path: Path) -> None:
    first = filled(tmp_path / "index.sqlite")
    second = Index(first.path)
    second.replace("semantic/a.md", chunks("semantic/a.md", "one", "two"), FileState(5, 5, "e"))
    first.replace_refs("MEMORY.md", ["f1"], [Chunk("MEMORY.md", "long_term", 0, 0, "g", ref="f1")])
    second.set_vectors("m", dict.fromkeys(second.chunks, VEC))
    first.replace("semantic/c.md", chunks("semantic/c.md", "three"), FileState(6, 6, "f"))
    resets = second.resets
    second.refresh()
    assert second.resets == resets  # what changed, not everything again
    assert mirror(first) == mirror(second)
    assert_mirrors_the_file(first)
    texts = Counter(chunk.text for chunk in first.chunks.values())
    assert texts == Counter({"one": 1, "two": 1, "g": 1, "three": 1})
    second.drop()
    first.refresh()
    assert first.chunks == {} and first.files == {}
    first.close()
    second.close()


def test_a_reader_the_pruned_log_left_behind_loads_everything_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_sqlite, "KEEP_CHANGES", 50)
    first = filled(tmp_path / "index.sqlite")
    second = Index(first.path)
    resets = second.resets
    for n in range(20):
        first.replace(
            f"semantic/{n}.md", chunks(f"semantic/{n}.md", "x", "y"), FileState(n, n, "s")
        )
    second.refresh()
    assert second.resets == resets + 1
    assert mirror(second) == mirror(first)
    first.close()
    second.close()


def test_an_append_decided_on_what_another_process_changed_is_stale(tmp_path: Path) -> None:
    path = "transcripts/s.jsonl"
    first = Index(tmp_path / "index.sqlite")
    first.replace(path, chunks(path, "turn 1"), FileState(10, 1, "a"))
    second = Index(first.path)
    second.replace(path, chunks(path, "turn 2"), FileState(20, 2, "b"), append=True)
    with pytest.raises(Stale):  # first still thinks the file is 10 bytes
        first.replace(path, chunks(path, "turn 2"), FileState(20, 2, "b"), append=True)
    assert first.files[path] == FileState(20, 2, "b")  # it knows now: decide again
    assert sorted(c.text for c in first.path_chunks(path)) == ["turn 1", "turn 2"]
    assert_mirrors_the_file(first)
    first.close()
    second.close()


def test_two_memories_on_one_workspace_find_each_fact_once(ws: Path) -> None:
    one, two = Memory.open(ws, embedder="hash"), Memory.open(ws, embedder="hash")
    try:
        kept = {}
        for n in range(12):
            writer, reader = (one, two) if n % 2 else (two, one)
            item = writer.remember(f"fact {n} about harbour lanterns")
            kept[item.id] = item.text
            if n % 3 == 0:
                writer.forget(item.id)
                del kept[item.id]
            for memory in (reader, writer):
                found = [hit.text for hit in memory.search("harbour lanterns", k=50)]
                assert sorted(found) == sorted(kept.values())
    finally:
        one.close()
        two.close()


# -- several processes ---------------------------------------------------------------------

# argv: workspace, process number, operations, embedder. Opens, says "ready",
# waits for a line on stdin (so that every process starts at once), then runs
# a seeded mix of remember / forget / memory-tool edits / searches and prints
# one JSON line: what it remembered (acknowledged), forgot, and every error.
MIXER = r"""
import json, random, sys, traceback
from memstrata import Memory
from memstrata.tools.memory_tool import MemoryToolHandler

ws, number, count, embedder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(number)
memory = Memory.open(ws, embedder=embedder)
tool = MemoryToolHandler(memory)
print("ready", flush=True)
sys.stdin.readline()
kept, forgot, errors, searches = {}, [], [], 0
note = f"/memories/semantic/process{number}.md"
for step in range(count):
    roll = rng.random()
    try:
        if roll < 0.35:
            text = f"process {number} fact {step} about harbour{step % 7} lanterns"
            kept[memory.remember(text).id] = text
        elif roll < 0.45 and kept:
            item_id = rng.choice(sorted(kept))
            memory.forget(item_id)
            forgot.append(kept.pop(item_id))
        elif roll < 0.60:
            answer = tool.handle(
                {"command": "create", "path": note,
                 "file_text": f"# Process {number}\n\nstep {step} harbour{step % 7} lanterns\n"}
            )
            if answer.startswith("Error"):
                errors.append(answer)
        else:
            searches += 1
            memory.search(f"harbour{step % 7} lanterns", k=5)
    except Exception:
        errors.append(traceback.format_exc())
memory.close()
print(json.dumps({"kept": kept, "forgot": forgot, "errors": errors, "searches": searches}))
"""


def run_mixers(
    ws: Path, processes: int, count: int, embedder: str, *, indexed: bool
) -> list[dict[str, object]]:
    """Start the mixers, release them together, wait for all; their reports.
    The workspace exists before they start; ``indexed``: its index file too
    (else they race to create it)."""
    with Memory.open(ws, embedder=embedder) as memory:
        if indexed:
            memory.search("harbour lanterns")
    with ExitStack() as stack:
        procs = [
            stack.enter_context(
                subprocess.Popen(
                    [sys.executable, "-c", MIXER, str(ws), str(n), str(count), embedder],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            for n in range(processes)
        ]
        stack.callback(lambda: [proc.kill() for proc in procs if proc.poll() is None])
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        reports = []
        for proc in procs:
            assert proc.stdout is not None and proc.stderr is not None
            out, err = proc.stdout.read(), proc.stderr.read()
            assert proc.wait(timeout=600) == 0, err
            reports.append(json.loads(out))
        return reports


def indexed_facts(ws: Path) -> Counter[str]:
    """The live long-term facts in the index file as it was left (no sync first)."""
    with closing(sqlite3.connect(ws / ".memstrata" / "index.sqlite")) as db:
        rows = db.execute("SELECT text FROM chunks WHERE path = 'MEMORY.md' AND live = 1")
        return Counter(text for (text,) in rows)


def indexed_twice(ws: Path) -> list[tuple[object, ...]]:
    """Chunks the index file holds more than once (no sync first)."""
    with closing(sqlite3.connect(ws / ".memstrata" / "index.sqlite")) as db:
        return db.execute(
            "SELECT path, ref, line_start, text, count(*) FROM chunks "
            "GROUP BY path, ref, line_start, text HAVING count(*) > 1"
        ).fetchall()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("embedder", "indexed", "count"),
    [("none", False, 200), ("hash", True, 200), ("minilm", True, 300)],
)
def test_four_processes_mixing_writes_and_searches_never_break_search(
    ws: Path, embedder: str, indexed: bool, count: int
) -> None:
    if embedder == "minilm":  # the default model: slow enough to widen every race
        for module in ("numpy", "onnxruntime", "tokenizers"):
            pytest.importorskip(module)
    reports = run_mixers(ws, 4, count, embedder, indexed=indexed)
    assert [report["errors"] for report in reports] == [[]] * 4
    assert all(report["searches"] and report["forgot"] for report in reports)
    kept: dict[str, str] = {}
    for report in reports:
        kept.update(report["kept"])  # type: ignore[call-overload]
    assert indexed_twice(ws) == []
    with Memory.open(ws, embedder=embedder) as memory:
        assert {item.id: item.text for item in memory.list()} == kept  # none lost
        for text in kept.values():
            assert text in [hit.text for hit in memory.search(text, k=20)]
        if embedder != "none":
            assert memory.index_status()["vectors"] > len(kept)
    assert indexed_twice(ws) == []
    assert indexed_facts(ws) == Counter(kept.values())  # each once, nothing forgotten
