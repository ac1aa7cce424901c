"""Journaled document changes (Documents.edit_file / rename_file, store.docs)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import AccessDenied, Conflict, InvalidInput, Memory, NotFound
from memstrata.storage.journal import scan
from memstrata.tools.memory_tool import MemoryToolHandler

KEY = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 3


def journal_ops(ws: Path) -> list[str]:
    return [record.op for record in scan(ws / ".memstrata" / "journal.wal").records]


def test_an_edit_is_a_journal_record_and_its_audit_line_keeps_no_text(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        assert memory.documents.edit_file("memory/plan.md", lambda old: "ship it\n") == "ship it\n"
        assert (ws / "memory" / "plan.md").read_text() == "ship it\n"
        assert journal_ops(ws)[-1] == "doc.put"
        memory.documents.edit_file("memory/plan.md", lambda old: (old or "") + "then rest\n")
        memory.flush()
        assert journal_ops(ws) == []  # checkpointed
    lines = [
        json.loads(line) for line in (ws / "memory" / "DOCS_AUDIT.jsonl").read_text().splitlines()
    ]
    assert [line["op"] for line in lines] == ["doc.put", "doc.put"]
    assert all("text" not in line and line["path"] == "memory/plan.md" for line in lines)
    assert lines[0]["before"] is None and lines[1]["before"] == lines[0]["after"]
    assert lines[1]["bytes"] == len("ship it\nthen rest\n")
    assert lines[0]["source"] == "agent"


def test_edit_delete_and_rename(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        memory.documents.edit_file("semantic/a.md", lambda old: "a\n")
        memory.documents.rename_file("semantic/a.md", "semantic/b.md")
        assert not (ws / "semantic" / "a.md").exists()
        assert (ws / "semantic" / "b.md").read_text() == "a\n"
        memory.documents.edit_file("semantic/c.md", lambda old: "c\n")
        with pytest.raises(Conflict):
            memory.documents.rename_file("semantic/b.md", "semantic/c.md")
        with pytest.raises(NotFound):
            memory.documents.rename_file("semantic/zzz.md", "semantic/d.md")
        assert memory.documents.edit_file("semantic/b.md", lambda old: None) is None
        assert not (ws / "semantic" / "b.md").exists()
        with pytest.raises(NotFound):
            memory.documents.edit_file("semantic/b.md", lambda old: None)
        assert (ws / "semantic" / "c.md").read_text() == "c\n"


def test_refusals_change_nothing(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        before = journal_ops(ws)
        with pytest.raises(InvalidInput, match="rendered"):
            memory.documents.edit_file("MEMORY.md", lambda old: "x")
        for hostile in ("../escape.md", "/etc/passwd", "memory/%2e%2e/x.md", "journal.wal"):
            with pytest.raises(AccessDenied):
                memory.documents.edit_file(hostile, lambda old: "x")
        (ws / "memory" / "bin.md").write_bytes(b"\xff\xfe")
        with pytest.raises(InvalidInput, match="UTF-8"):
            memory.documents.edit_file("memory/bin.md", lambda old: "x")

        def refuse(old: str | None) -> str:
            raise ValueError("the edit changed its mind")

        with pytest.raises(ValueError):
            memory.documents.edit_file("memory/new.md", refuse)
        assert not (ws / "memory" / "new.md").exists()
        assert journal_ops(ws) == before
    assert not (ws.parent / "escape.md").exists()


def test_only_the_lines_an_edit_adds_are_redacted(ws: Path) -> None:
    typed = f"old key kept by hand: {KEY}\n"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "k.md").write_text(typed)
    with Memory.open(ws, embedder="none") as memory:
        memory.documents.edit_file("memory/k.md", lambda old: (old or "") + f"new key {KEY}\n")
    text = (ws / "memory" / "k.md").read_text()
    assert text.startswith(typed)
    assert text.count(KEY) == 1


class _Killed(BaseException):
    """Stands in for a kill between the journal record and the rename."""


def test_a_change_logged_but_not_applied_is_redone_by_the_next_open(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Memory.open(ws, embedder="none")
    tool = MemoryToolHandler(first)
    real_replace = os.replace

    def die(src: object, dst: object) -> None:
        raise _Killed

    monkeypatch.setattr("memstrata.storage.files.os.replace", die)
    with pytest.raises(_Killed):
        tool.handle({"command": "create", "path": "/memories/memory/x.md", "file_text": "kept\n"})
    monkeypatch.setattr("memstrata.storage.files.os.replace", real_replace)
    assert not (ws / "memory" / "x.md").exists()
    assert journal_ops(ws)[-1] == "doc.put"
    with Memory.open(ws, embedder="none"):
        assert (ws / "memory" / "x.md").read_text() == "kept\n"
    first.close()
    assert (ws / "memory" / "x.md").read_text() == "kept\n"


def test_redo_never_overwrites_a_later_hand_edit(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        memory.documents.edit_file("memory/x.md", lambda old: "by the agent\n")
        memory.documents.edit_file("memory/y.md", lambda old: "y\n")
        memory.documents.rename_file("memory/y.md", "memory/z.md")
        (ws / "memory" / "x.md").write_text("by hand\n")
        (ws / "memory" / "y.md").write_text("a new y by hand\n")
        assert {"doc.put", "doc.mv"} <= set(journal_ops(ws))
    with Memory.open(ws, embedder="none"):  # close checkpointed, open replays nothing new
        pass
    assert (ws / "memory" / "x.md").read_text() == "by hand\n"
    assert (ws / "memory" / "y.md").read_text() == "a new y by hand\n"
    assert (ws / "memory" / "z.md").read_text() == "y\n"


def test_a_tool_write_is_found_by_search(ws: Path) -> None:
    with Memory.open(ws, embedder="hash") as memory:
        tool = MemoryToolHandler(memory)
        memory.search("anything")  # the index exists before the write
        tool.handle(
            {
                "command": "create",
                "path": "/memories/semantic/birds.md",
                "file_text": "The kestrel hovers over the meadow.\n",
            }
        )
        memory.documents.edit_file("memory/fish.md", lambda old: "A pike waits in the reeds.\n")
        hits = memory.search("kestrel meadow")
        assert hits and hits[0].path == "semantic/birds.md"
        hits = memory.search("pike reeds")
        assert hits and hits[0].path == "memory/fish.md" and hits[0].layer == "semantic"


# argv: workspace. Prints "<i>" only after the memory tool answered.
TOOL_CHILD = r"""
import os, sys
from memstrata import Memory
from memstrata.tools.memory_tool import MemoryToolHandler

memory = Memory.open(sys.argv[1], embedder="none")
tool = MemoryToolHandler(memory)
memory.documents.edit_file("memory/log.md", lambda old: "" if old is None else old)
print("open", flush=True)
for i in range(100_000):
    name = f"/memories/notes/inbox/n{os.getpid()}-{i}.md"
    answer = tool.handle({"command": "create", "path": name, "file_text": f"note {i}\n"})
    assert answer.startswith("File created"), answer
    answer = tool.handle({"command": "insert", "path": "/memories/memory/log.md",
                          "insert_line": 0, "insert_text": f"{os.getpid()}-{i}"})
    assert answer.startswith("The memory file"), answer
    print(f"{os.getpid()}-{i}", flush=True)
"""


@pytest.mark.slow
def test_memory_tool_writes_survive_sigkill(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    acked: list[str] = []
    rng = random.Random()
    for _ in range(2):
        command = [sys.executable, "-c", TOOL_CHILD, str(ws)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            try:
                assert proc.stdout.readline() == b"open\n", proc.stderr.read().decode()
                for _ in range(rng.randint(20, 60)):
                    line = proc.stdout.readline()
                    assert line, proc.stderr.read().decode()
                    acked.append(line.decode().strip())
            finally:
                proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
    with Memory.open(ws, embedder="none"):
        log = (ws / "memory" / "log.md").read_text().split()
        for name in acked:
            pid, i = name.split("-")
            note = ws / "notes" / "inbox" / f"n{pid}-{i}.md"
            assert note.read_text() == f"note {i}\n"
        assert set(acked) <= set(log)


# argv: workspace, tag. Appends 300 lines to one file through edit_file.
APPEND_CHILD = r"""
import sys
from memstrata import Memory

memory = Memory.open(sys.argv[1], embedder="none")
print("ready", flush=True)
sys.stdin.readline()  # both start together
for i in range(300):
    memory.documents.edit_file("memory/shared.md", lambda old: (old or "") + f"{sys.argv[2]}-{i}\n")
memory.close()
"""


@pytest.mark.slow
def test_two_processes_editing_one_file_lose_no_edit(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    Memory.open(ws, embedder="none").close()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", APPEND_CHILD, str(ws), tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for tag in "ab"
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.close()
    for child in children:
        assert child.wait(timeout=120) == 0
        assert child.stdout is not None
        child.stdout.close()
    lines = (ws / "memory" / "shared.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"{tag}-{i}" for tag in "ab" for i in range(300))
    # the workspace lock is fair: neither writer waited for the other to finish
    switches = sum(
        1 for before, after in zip(lines, lines[1:], strict=False) if before[0] != after[0]
    )
    assert switches >= 20, f"the writers took turns only {switches} times"


def test_a_file_that_is_not_utf8_can_still_be_renamed(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        (ws / "memory" / "bin.md").write_bytes(b"\xff\xfe raw")
        memory.documents.rename_file("memory/bin.md", "memory/raw.md")
    assert (ws / "memory" / "raw.md").read_bytes() == b"\xff\xfe raw"
    assert not (ws / "memory" / "bin.md").exists()


def test_a_checkpoint_hashes_each_file_once_not_each_record(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.stores import docs

    with Memory.open(ws, embedder="none", checkpoint_every_updates=10_000) as memory:
        for n in range(50):
            memory.documents.edit_file("memory/log.md", lambda old, n=n: (old or "") + f"{n}\n")
        redone: list[str] = []
        real = docs.redo

        def counted(root: Path, record: object) -> bool:
            redone.append(record.data["path"])  # type: ignore[attr-defined]
            return real(root, record)  # type: ignore[arg-type]

        monkeypatch.setattr(docs, "redo", counted)
        memory.flush()
        assert redone == ["memory/log.md"]
    assert (ws / "memory" / "log.md").read_text().split() == [str(n) for n in range(50)]
