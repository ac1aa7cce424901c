"""Several processes and threads on one workspace: nothing lost, nothing stored twice."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pytest

from memstrata import Item, Memory
from memstrata.stores import markdown
from memstrata.stores.longterm import Snapshot

# argv: workspace, text prefix, count. Opens, says "ready", waits for a line on
# stdin (so that every writer starts at once), writes, closes, says how many.
WRITER = r"""
import sys
from memstrata import Memory

ws, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
memory = Memory.open(ws)
print("ready", flush=True)
sys.stdin.readline()
for i in range(count):
    memory.remember(f"{prefix} {i}")
memory.close()
print("done", count, flush=True)
"""


def run_writers(ws: Path, prefixes: list[str], count: int) -> None:
    """Start one writer process per prefix, release them together, wait for all.

    The workspace does not exist yet: the writers also race to create it.
    """
    with ExitStack() as stack:
        procs = [
            stack.enter_context(
                subprocess.Popen(
                    [sys.executable, "-c", WRITER, str(ws), prefix, str(count)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            for prefix in prefixes
        ]
        stack.callback(lambda: [proc.kill() for proc in procs if proc.poll() is None])
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        for proc in procs:
            assert proc.stdout is not None and proc.stderr is not None
            out, err = proc.stdout.read(), proc.stderr.read()
            assert proc.wait(timeout=120) == 0, err
            assert out == f"done {count}\n"


def assert_files_hold(ws: Path, live: dict[str, Item]) -> None:
    """MEMORY.md and the snapshot (after a checkpoint) hold exactly ``live``."""
    parsed = markdown.parse((ws / "MEMORY.md").read_bytes())
    assert parsed.bad == []
    assert len(parsed.lines) == len(live)
    assert {line.item_id: line.text for line in parsed.lines} == {
        item_id: item.text for item_id, item in live.items()
    }
    snapshot = Snapshot.load(ws / "memory" / "LTM_SNAPSHOT.json")
    assert snapshot.items == live


@pytest.mark.slow
def test_four_processes_writing_at_once_lose_nothing(ws: Path) -> None:
    prefixes = [f"process {n} fact" for n in range(4)]
    run_writers(ws, prefixes, 500)
    with Memory.open(ws) as memory:
        items = memory.list()
    texts = [item.text for item in items]
    expected = {f"{prefix} {i}" for prefix in prefixes for i in range(500)}
    assert len(texts) == len(set(texts)), "a text was stored twice"
    assert len({item.id for item in items}) == len(items), "an id was given twice"
    missing = expected - set(texts)
    assert not missing, f"{len(missing)} acknowledged write(s) lost, e.g. {sorted(missing)[:3]}"
    assert set(texts) == expected
    assert_files_hold(ws, {item.id: item for item in items})
    assert len(Snapshot.load(ws / "memory" / "LTM_SNAPSHOT.json").items) == 2000


@pytest.mark.slow
def test_the_same_text_from_several_processes_is_stored_once(ws: Path) -> None:
    run_writers(ws, ["shared fact"] * 4, 50)
    with Memory.open(ws) as memory:
        items = memory.list()
    assert sorted(item.text for item in items) == sorted(f"shared fact {i}" for i in range(50))
    # Every remember after the first of a text is a duplicate: hits + 1 each.
    assert sum(item.hits for item in items) == 4 * 50 - 50
    assert Counter(item.hits for item in items) == {3: 50}
    assert_files_hold(ws, {item.id: item for item in items})


def test_a_reader_sees_another_writers_records_without_reopening(ws: Path) -> None:
    with Memory.open(ws) as reader, Memory.open(ws) as writer:
        assert reader.list() == []
        first = writer.remember("written by the other handle")
        assert [item.text for item in reader.list()] == [first.text]  # from the journal
        assert reader.get(first.id) == first
        again = writer.remember("Written by the other handle.")  # a duplicate
        assert reader.get(first.id).hits == again.hits == 1
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, os; from memstrata import Memory; "
                "Memory.open(sys.argv[1]).remember('written by another process'); "
                "os._exit(0)",  # no close(): the record is only in the journal
                str(ws),
            ],
            check=True,
        )
        texts = {item.text for item in reader.list()}
        assert texts == {first.text, "written by another process"}


def test_a_reader_follows_a_checkpoint_and_writes_after_it(ws: Path) -> None:
    with Memory.open(ws) as reader, Memory.open(ws) as writer:
        reader.remember("before the checkpoint, from the reader")
        writer.remember("before the checkpoint, from the writer")
        writer.flush()  # MEMORY.md and the snapshot rendered, the journal emptied
        assert {item.text for item in reader.list()} == {
            "before the checkpoint, from the reader",
            "before the checkpoint, from the writer",
        }
        reader.remember("after the checkpoint, from the reader")
        expected = {item.text for item in writer.list()}
        assert "after the checkpoint, from the reader" in expected
        assert len(expected) == 3
    with Memory.open(ws) as memory:
        assert {item.text for item in memory.list()} == expected


def test_a_reader_loses_nothing_when_several_checkpoints_pass_it_by(ws: Path) -> None:
    """Each checkpoint replaces the journal: a reader must not skip a whole generation."""
    with Memory.open(ws) as reader, Memory.open(ws) as writer:
        expected = set()
        for n in range(3):
            expected.add(writer.remember(f"generation {n}").text)
            writer.flush()
        assert {item.text for item in reader.list()} == expected
        expected.add(reader.remember("written by the reader").text)
    with Memory.open(ws) as memory:
        assert {item.text for item in memory.list()} == expected


@pytest.mark.slow  # another process
def test_a_process_that_waited_through_other_checkpoints_keeps_their_writes(ws: Path) -> None:
    """Another process checkpoints twice while this one is idle; this one then writes."""
    script = (
        "import sys; from memstrata import Memory\n"
        "with Memory.open(sys.argv[1], checkpoint_every_updates=5) as m:\n"
        "    for i in range(12): m.remember(f'from the other process {i}')\n"
    )
    with Memory.open(ws) as idle:
        subprocess.run([sys.executable, "-c", script, str(ws)], check=True)
        idle.remember("from the idle process")
    expected = {f"from the other process {i}" for i in range(12)} | {"from the idle process"}
    with Memory.open(ws) as memory:
        assert {item.text for item in memory.list()} == expected


def test_threads_sharing_one_memory(ws: Path) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    with Memory.open(ws) as memory:

        def work(n: int) -> None:
            try:
                start.wait()
                for i in range(100):
                    memory.remember(f"thread {n} fact {i}")
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert not any(thread.is_alive() for thread in threads)
        items = memory.list()
        assert len(items) == 800
        assert len({item.id for item in items}) == 800
    expected = {f"thread {n} fact {i}" for n in range(8) for i in range(100)}
    assert {item.text for item in items} == expected
    with Memory.open(ws) as memory:
        assert {item.text for item in memory.list()} == expected
    assert_files_hold(ws, {item.id: item for item in items})
