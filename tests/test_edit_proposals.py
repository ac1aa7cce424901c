"""A hand edit of MEMORY.md is a proposal: damage is set aside, saves made from
an older copy are merged, a checkpoint never overwrites a save, and nothing
deleted is gone for good."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import Conflict, NotFound
from memstrata.storage.quarantine import list_quarantine


def _backdate(path: Path, seconds: float = 10.0) -> None:
    """Make a file look written a while ago (not a save in progress)."""
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def _seed(ws: Path, n: int = 35) -> list[str]:
    with Memory.open(ws, embedder="none") as memory:
        return [memory.remember(f"fact number {i} about topic {i * 7}").id for i in range(n)]


def _assert_all_kept(memory: Memory, ws: Path, written: list[str], hand: list[str]) -> None:
    """After an editor race: let the last save settle, close, and find every
    agent fact and every hand line after a reopen."""
    time.sleep(0.6)
    memory.flush()
    memory.close()
    with Memory.open(ws, embedder="none") as reopened:
        items = reopened.list()
        assert set(written) <= {item.id for item in items}
        assert set(hand) <= {item.text for item in items}


def _live_ids(ws: Path) -> set[str]:
    with Memory.open(ws, embedder="none") as memory:
        return {item.id for item in memory.list()}


def test_an_in_place_save_during_a_checkpoint_loses_nothing(tmp_path: Path) -> None:
    """The issue's reproduction: an editor truncates MEMORY.md, a checkpoint
    runs, then the editor writes its text."""
    ws = str(tmp_path / "ws")
    memory = Memory.open(ws, embedder="none")
    ids = [memory.remember(f"f{i}").id for i in range(20)]
    memory.flush()
    text = Path(ws, "MEMORY.md").read_text()
    saved = text.replace("## Facts\n", "## Facts\n- added while the agent wrote\n")
    editor = open(ws + "/MEMORY.md", "w")  # noqa: SIM115 (truncates; the save comes later)
    z = memory.remember("z")
    memory.flush()
    editor.write(saved)
    editor.close()
    memory.flush()
    memory.close()
    with Memory.open(ws, embedder="none") as reopened:
        texts = {item.text for item in reopened.list()}
        assert {item.id for item in reopened.list()} >= {*ids, z.id}
        assert "added while the agent wrote" in texts
        assert reopened.status().items == 22


@pytest.mark.parametrize(
    "damage",
    ["garbage", "half", "empty", "no-title"],
)
def test_a_damaged_memory_md_is_set_aside_not_read_as_deletions(ws: Path, damage: str) -> None:
    ids = _seed(ws)
    path = ws / "MEMORY.md"
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(random.Random(7).randbytes(len(data)))
    elif damage == "half":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(data.replace(b"# MEMORY.md -- Long-Term Memory\n", b""))
    damaged = path.read_bytes()
    _backdate(path)
    with Memory.open(ws, embedder="none") as memory:
        assert {item.id for item in memory.list()} == set(ids)
        notice = " ".join(memory.notices)
        assert "looked damaged" in notice and "memstrata accept-edit" in notice
    stored = [
        e for e in list_quarantine(ws / ".memstrata" / "quarantine") if e.original == "MEMORY.md"
    ]
    assert stored and (ws / ".memstrata" / "quarantine" / stored[-1].stored).read_bytes() == damaged
    assert all(f"^{item_id}" in path.read_text() for item_id in ids)  # rendered again
    assert _live_ids(ws) == set(ids)  # and the snapshot still holds them


def test_a_mass_deletion_is_damage_until_accepted(ws: Path) -> None:
    ids = _seed(ws, 30)
    path = ws / "MEMORY.md"
    lines = path.read_text().splitlines(keepends=True)
    doomed = set(ids[:10])
    path.write_text("".join(line for line in lines if not any(i in line for i in doomed)))
    _backdate(path)
    with Memory.open(ws, embedder="none") as memory:
        assert {item.id for item in memory.list()} == set(ids)
        assert any("would delete 10 of 30" in n for n in memory.notices)
        assert memory.accept_edit() == 10
        assert {item.id for item in memory.list()} == set(ids) - doomed
        assert {f.item.id for f in memory.forgotten()} == doomed
    assert _live_ids(ws) == set(ids) - doomed


def test_a_small_deletion_is_taken_in_and_restorable(ws: Path) -> None:
    ids = _seed(ws, 30)
    path = ws / "MEMORY.md"
    lines = path.read_text().splitlines(True)
    path.write_text("".join(line for line in lines if ids[3] not in line))
    _backdate(path)
    with Memory.open(ws, embedder="none") as memory:
        assert ids[3] not in {item.id for item in memory.list()}
        [gone] = memory.forgotten()
        assert gone.item.id == ids[3] and gone.reason == "hand_delete"
        restored = memory.restore(ids[3])
        assert restored.text == "fact number 3 about topic 21"
        assert memory.forgotten() == []
    assert ids[3] in _live_ids(ws)
    assert f"^{ids[3]}" in path.read_text()


def test_forget_then_restore_survives_a_restart(ws: Path) -> None:
    ids = _seed(ws, 3)
    with Memory.open(ws, embedder="none") as memory:
        memory.forget(ids[1])
        with pytest.raises(Conflict):
            memory.restore(ids[0])  # live: nothing to restore
        with pytest.raises(NotFound):
            memory.restore("mzzzzzzzz")
    with Memory.open(ws, embedder="none") as memory:  # forgotten kept in the snapshot
        assert [f.item.id for f in memory.forgotten()] == [ids[1]]
        memory.restore(ids[1])
    assert _live_ids(ws) == set(ids)


def test_forgotten_items_expire_after_the_retention(ws: Path) -> None:
    ids = _seed(ws, 2)
    with Memory.open(ws, embedder="none", forgotten_retention_days=0) as memory:
        memory.forget(ids[0])
        memory.flush()
        assert memory.forgotten() == []


def test_restoring_a_fact_a_live_one_repeats_is_a_conflict(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        old = memory.remember("I drink tea")
        memory.forget(old.id)
        memory.remember("I drink tea")
        with pytest.raises(Conflict, match="already says"):
            memory.restore(old.id)


def test_a_save_from_an_older_copy_keeps_what_the_agent_wrote_since(ws: Path) -> None:
    """The person opened MEMORY.md, the agent wrote and checkpointed, the person saved."""
    ids = _seed(ws, 5)
    path = ws / "MEMORY.md"
    copy = path.read_text()
    with Memory.open(ws, embedder="none") as memory:
        later = [memory.remember(f"written by the agent later {i}").id for i in range(3)]
        memory.flush()
        assert all(i in path.read_text() for i in later)
        edited = copy.replace(
            f"fact number 2 about topic 14 ^{ids[2]}", f"fact two, edited ^{ids[2]}"
        )
        edited = edited.replace(f"- fact number 4 about topic 28 ^{ids[4]}\n", "")
        path.write_text(edited + "- a line the person added\n")
        _backdate(path)
        memory.flush()
        live = {item.id: item.text for item in memory.list()}
    assert set(later) <= live.keys()  # not taken as deleted by hand
    assert live[ids[2]] == "fact two, edited"
    assert ids[4] not in live
    assert "a line the person added" in live.values()


def test_an_edit_of_a_line_the_agent_also_changed_keeps_both(ws: Path) -> None:
    ids = _seed(ws, 3)
    path = ws / "MEMORY.md"
    copy = path.read_text()
    with Memory.open(ws, embedder="none") as memory:
        new = memory.supersede(ids[0], "fact zero, corrected by the agent")
        memory.flush()
        path.write_text(copy.replace("fact number 0 about topic 0", "fact zero, corrected by hand"))
        _backdate(path)
        memory.flush()
        texts = {item.text for item in memory.list()}
        assert {"fact zero, corrected by the agent", "fact zero, corrected by hand"} <= texts
        assert not memory.get(ids[0]).is_live and memory.get(new.id).is_live
        assert any("kept both" in n for n in memory.notices)


def test_a_save_in_progress_is_left_for_a_later_checkpoint(ws: Path) -> None:
    ids = _seed(ws, 10)
    path = ws / "MEMORY.md"
    with Memory.open(ws, embedder="none") as memory:
        path.write_bytes(b"")  # an editor truncated it this instant
        extra = memory.remember("written meanwhile")
        memory.flush()
        assert path.read_bytes() == b""  # not overwritten under the editor
        assert memory.status().journal_records > 0  # the journal keeps the write
        _backdate(path)  # the editor never wrote: now it is damage
        memory.flush()
        assert {item.id for item in memory.list()} == {*ids, extra.id}
    assert f"^{extra.id}" in path.read_text()


def test_a_hand_added_line_over_the_fact_limit_is_set_aside(ws: Path) -> None:
    _seed(ws, 2)
    path = ws / "MEMORY.md"
    path.write_text(path.read_text() + "- " + "x" * 50_000 + "\n- a normal new line\n")
    with Memory.open(ws, embedder="none") as memory:
        texts = [item.text for item in memory.list()]
        assert "a normal new line" in texts
        assert max(len(t) for t in texts) < 4001
        assert any("over the 4000" in n for n in memory.notices)


def test_a_memory_md_without_snapshot_holds_long_lines_to_the_limit(ws: Path) -> None:
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# MEMORY.md\n\n## Facts\n- ok\n- " + "y" * 5000 + "\n")
    with Memory.open(ws, embedder="none") as memory:
        assert [item.text for item in memory.list()] == ["ok"]


@pytest.mark.slow
def test_an_editor_saving_in_place_while_the_agent_writes_loses_nothing(ws: Path) -> None:
    """Randomised: an editor thread truncates and writes MEMORY.md (adding one
    line each time) while the agent writes and checkpoints."""
    rng = random.Random(11)
    path = ws / "MEMORY.md"
    memory = Memory.open(ws, embedder="none", checkpoint_interval_seconds=0)
    written: list[str] = []
    stop = threading.Event()
    hand_lines = [f"hand line {i}" for i in range(12)]

    def editor() -> None:
        for line in hand_lines:
            text = path.read_text(encoding="utf-8", errors="replace")
            time.sleep(rng.uniform(0, 0.02))
            with open(path, "w", encoding="utf-8") as out:  # truncate ...
                time.sleep(rng.uniform(0, 0.02))
                out.write(text + f"- {line}\n")  # ... then write
            time.sleep(rng.uniform(0.6, 0.8))  # the person reads on before the next save
        stop.set()

    thread = threading.Thread(target=editor)
    thread.start()
    i = 0
    while not stop.is_set():
        written.append(memory.remember(f"agent fact {i}").id)
        i += 1
        if i % 3 == 0:
            memory.flush()
        time.sleep(0.01)
    thread.join()
    _assert_all_kept(memory, ws, written, hand_lines)


def test_the_cli_lists_forgotten_facts_restores_them_and_accepts_an_edit(ws: Path) -> None:
    import json

    from click.testing import CliRunner

    from memstrata.cli import cli

    ids = _seed(ws, 12)
    run = CliRunner().invoke
    assert run(cli, ["delete", ids[0], "-w", str(ws)]).exit_code == 0
    listed = run(cli, ["forgotten", "--json", "-w", str(ws)])
    assert [entry["item"]["id"] for entry in json.loads(listed.output)] == [ids[0]]
    assert run(cli, ["restore", ids[0], "-w", str(ws)]).exit_code == 0
    assert json.loads(run(cli, ["forgotten", "--json", "-w", str(ws)]).output) == []
    path = ws / "MEMORY.md"
    path.write_text(path.read_text().split("## Facts")[0] + "## Facts\n- only this\n")
    _backdate(path)
    doctor = run(cli, ["doctor", "-w", str(ws)])
    assert "accept-edit" in doctor.output
    accepted = run(cli, ["accept-edit", "--json", "-w", str(ws)])
    assert accepted.exit_code == 0, accepted.output
    assert json.loads(accepted.output) == {"changes": 13}
    assert _live_ids(ws) == {item.id for item in Memory.open(ws, embedder="none").list()}
    with Memory.open(ws, embedder="none") as memory:
        assert [item.text for item in memory.list()] == ["only this"]
        assert len(memory.forgotten()) == 12
    failed = run(cli, ["restore", "mzzzzzzzz", "-w", str(ws)])
    assert failed.exit_code == 1 and "no forgotten item" in failed.output


def test_a_same_size_rewrite_within_the_clock_tick_is_not_taken_for_unchanged(
    tmp_path: Path,
) -> None:
    """Coarse mtimes and reused inodes can make a new file stat like the old one:
    a fingerprint taken right after a write must compare content."""
    from memstrata.storage.volume import DiskVolume
    from memstrata.stores.longterm import Fingerprint

    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"- one ^m00000001\n")
    volume = DiskVolume(tmp_path)
    stat = volume.stat("MEMORY.md")
    assert stat is not None
    fingerprint = Fingerprint.of(stat, path.read_bytes())
    st = path.stat()
    path.write_bytes(b"- two ^m00000001\n")  # same size, same inode
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime (one clock tick)
    assert not fingerprint.matches(volume, "MEMORY.md")


@pytest.mark.slow
def test_editor_saves_by_rename_while_threads_write_lose_nothing(ws: Path) -> None:
    """An editor that saves by renaming a new file over MEMORY.md, while three
    threads write and checkpoint as fast as they can."""
    path = ws / "MEMORY.md"
    memory = Memory.open(ws, embedder="none", checkpoint_every_updates=15)
    stop = threading.Event()
    written: list[str] = []
    guard = threading.Lock()

    def writer(k: int) -> None:
        i = 0
        while not stop.is_set():
            item = memory.remember(f"thread {k} fact {i}")
            with guard:
                written.append(item.id)
            i += 1
            if i % 10 == 0:
                memory.flush()
            time.sleep(0.002)

    hand = [f"hand edited line {j}" for j in range(15)]

    def editor() -> None:
        for line in hand:
            text = path.read_text(encoding="utf-8")
            temp = path.with_name("MEMORY.md.edit")
            temp.write_text(text + f"- {line}\n", encoding="utf-8")
            os.replace(temp, path)
            time.sleep(0.55)
        stop.set()

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=editor))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _assert_all_kept(memory, ws, written, hand)
