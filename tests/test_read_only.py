"""A workspace that cannot be written is still read: list, get, search, status,
context and the tools work; every write fails with one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import StorageError


def _mount_read_only(source: Path, target: Path) -> bool:
    target.mkdir()
    for command in (
        ["mount", "--bind", str(source), str(target)],
        ["mount", "-o", "remount,bind,ro", str(target)],
    ):
        done = subprocess.run(command, capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", str(target)], capture_output=True, check=False)
            return False
    return True


@pytest.fixture
def ro_workspace(tmp_path: Path) -> Iterator[Path]:
    """A populated workspace seen through a read-only bind mount."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8)")
    source = tmp_path / "src"
    with Memory.open(source, embedder="none") as memory:
        memory.remember("My name is Dilnoza", category="proper_noun")
        memory.remember("I prefer tea over coffee", category="preference")
        memory.record_turn("s1", user="we deploy on Fridays", assistant="noted")
        memory.search("tea")  # builds the index on disk
        memory.remember("written after the index was built")
    target = tmp_path / "ro"
    if not _mount_read_only(source, target):
        pytest.skip("this machine cannot make a read-only bind mount")
    try:
        with pytest.raises(OSError):
            (target / "probe").write_text("x")
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True, check=False)


def test_reads_work_on_a_read_only_mount(ro_workspace: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in ro_workspace.rglob("*") if p.is_file()}
    with Memory.open(ro_workspace, embedder="none") as memory:
        assert memory.read_only
        texts = {item.text for item in memory.list()}
        assert "written after the index was built" in texts
        assert memory.get(memory.list()[0].id)
        assert memory.status().items == 3
        hits = memory.search("tea")
        assert hits and "tea" in hits[0].text
        assert any("after the index" in hit.text for hit in memory.search("written after"))
        assert "Dilnoza" in memory.build_context("who am I?", budget_tokens=500).text
    after = {p: p.stat().st_mtime_ns for p in ro_workspace.rglob("*") if p.is_file()}
    assert before == after


def test_writes_on_a_read_only_mount_fail_with_one_clear_error(ro_workspace: Path) -> None:
    with Memory.open(ro_workspace, embedder="none") as memory:
        item = memory.list()[0]
        for write in (
            lambda: memory.remember("a new fact"),
            lambda: memory.forget(item.id),
            lambda: memory.observe("My name is Aziz"),
            lambda: memory.record_turn("s1", user="hi", assistant="hello"),
            lambda: memory.flush(),
        ):
            with pytest.raises(StorageError, match="read-only"):
                write()


@pytest.mark.slow
def test_the_cli_reads_a_read_only_mount_and_refuses_writes(ro_workspace: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(Path(sys.executable).with_name("memstrata")), *args, "-w", str(ro_workspace)]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    listed = run("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 3
    found = run("search", "tea", "--json")
    assert found.returncode == 0, found.stderr
    refused = run("remember", "a new fact")
    assert refused.returncode == 1
    assert "read-only" in refused.stderr and "Traceback" not in refused.stderr


def test_read_only_by_request_changes_no_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none") as memory:
        memory.remember("I prefer tea over coffee")
        memory.search("tea")
        memory.remember("a fact the index has not seen")
    (ws / "MEMORY.md").write_text((ws / "MEMORY.md").read_text() + "- a hand edit\n")
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    with Memory.open(ws, embedder="none", read_only=True) as memory:
        assert [hit.text for hit in memory.search("index has not seen")][:1] == [
            "a fact the index has not seen"
        ]
        assert any("not taken in" in notice for notice in memory.notices)
        with pytest.raises(StorageError, match="read-only"):
            memory.remember("refused")
    assert {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()} == before
