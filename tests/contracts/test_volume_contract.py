"""The ``Volume`` contract (``memstrata.storage.volume``): every place a
workspace's files live passes these. A new backend adds itself to ``BACKENDS``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import postgres_server
from fakes import InMemoryVolume
from memstrata.errors import InvalidInput
from memstrata.postgres.volume import PostgresVolume
from memstrata.storage.files import last_json_object
from memstrata.storage.volume import TAIL_BYTES, DiskVolume, Volume, last_record

BACKENDS: dict[str, Callable[[Path], Volume]] = {
    "disk": lambda tmp: DiskVolume(tmp / "ws"),
    "memory": lambda tmp: InMemoryVolume(),
    "postgres": lambda tmp: PostgresVolume(postgres_server.app_url(), postgres_server.tenant()),
}


@pytest.fixture(params=sorted(BACKENDS))
def volume(request: pytest.FixtureRequest, tmp_path: Path) -> Volume:
    return BACKENDS[request.param](tmp_path)


def test_it_is_a_volume(volume: Volume) -> None:
    assert isinstance(volume, Volume)
    assert volume.list() == []
    assert volume.read("MEMORY.md") is None
    assert volume.stat("MEMORY.md") is None


def test_write_read_replace(volume: Volume) -> None:
    volume.write("core/AGENT.md", b"one\n")
    assert volume.read("core/AGENT.md") == b"one\n"
    first = volume.stat("core/AGENT.md")
    volume.write("core/AGENT.md", b"two, longer\n")
    assert volume.read("core/AGENT.md") == b"two, longer\n"
    second = volume.stat("core/AGENT.md")
    assert first is not None and second is not None
    assert second != first and second.size == len(b"two, longer\n")


def test_append_starts_its_own_line(volume: Volume) -> None:
    volume.append("sessions/a.jsonl", b'{"a":1}\n', header=b"# h\n")
    volume.append("sessions/a.jsonl", b'{"b":2}\n', header=b"# h\n")
    assert volume.read("sessions/a.jsonl") == b'# h\n{"a":1}\n{"b":2}\n'
    volume.write("torn.jsonl", b'{"a":1}\n{"tor')
    volume.append("torn.jsonl", b'{"c":3}\n')
    assert volume.read("torn.jsonl") == b'{"a":1}\n{"tor\n{"c":3}\n'
    before = volume.stat("torn.jsonl")
    volume.append("torn.jsonl", b"x\n")
    assert volume.stat("torn.jsonl") != before


def test_create_never_overwrites(volume: Volume) -> None:
    assert volume.create("notes/inbox/a.md", b"first\n") is True
    assert volume.create("notes/inbox/a.md", b"second\n") is False
    assert volume.read("notes/inbox/a.md") == b"first\n"


def test_rename_and_delete(volume: Volume) -> None:
    volume.write("notes/a.md", b"a\n")
    volume.write("notes/b.md", b"b\n")
    volume.rename("notes/a.md", "notes/zettel/b.md")
    volume.rename("notes/b.md", "notes/zettel/b.md")  # replaces
    assert volume.read("notes/a.md") is None
    assert volume.read("notes/zettel/b.md") == b"b\n"
    assert volume.delete("notes/zettel/b.md") is True
    assert volume.delete("notes/zettel/b.md") is False
    assert volume.list() == []


def test_list_by_folder_sorted(volume: Volume) -> None:
    for rel in ["memory/2026-01-02.md", "MEMORY.md", "memory/x/deep.md", "memoryless.md"]:
        volume.write(rel, rel.encode())
    assert [rel for rel, _ in volume.list()] == sorted(
        ["MEMORY.md", "memory/2026-01-02.md", "memory/x/deep.md", "memoryless.md"]
    )
    listed = dict(volume.list("memory/"))
    assert sorted(listed) == ["memory/2026-01-02.md", "memory/x/deep.md"]
    assert listed["memory/x/deep.md"] == volume.stat("memory/x/deep.md")
    assert volume.list("nothing/") == []


def test_swap_only_while_unchanged(volume: Volume) -> None:
    assert volume.swap("MEMORY.md", b"v1\n", None).done  # only while absent
    assert not volume.swap("MEMORY.md", b"v0\n", None).done
    known = volume.stat("MEMORY.md")
    assert known is not None
    swapped = volume.swap("MEMORY.md", b"v2\n", known)
    assert swapped.done and swapped.rescued is None
    assert volume.read("MEMORY.md") == b"v2\n"
    volume.write("MEMORY.md", b"a person's save\n")
    assert not volume.swap("MEMORY.md", b"v3\n", known).done  # changed since
    assert volume.read("MEMORY.md") == b"a person's save\n"


@pytest.mark.parametrize("bad", ["", "/abs", "a/../b", "./a", "a//b", "a\\b", "a\x00", ".."])
def test_bad_paths_refused(volume: Volume, bad: str) -> None:
    for call in (
        lambda: volume.read(bad),
        lambda: volume.write(bad, b"x"),
        lambda: volume.append(bad, b"x"),
        lambda: volume.stat(bad),
    ):
        with pytest.raises(InvalidInput):
            call()


_NAMES = st.sampled_from(["a.md", "memory/b.md", "sessions/c.jsonl", "notes/inbox/d.md"])


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["write", "append", "delete"]), _NAMES, st.binary(max_size=40)),
        max_size=12,
    )
)
def test_matches_a_dict_of_bytes(volume: Volume, steps: list[tuple[str, str, bytes]]) -> None:
    """Any sequence of writes, appends and deletes reads back as a plain model would."""
    for rel, _ in volume.list():
        volume.delete(rel)
    model: dict[str, bytes] = {}
    for op, rel, data in steps:
        if op == "write":
            volume.write(rel, data)
            model[rel] = data
        elif op == "append":
            volume.append(rel, data)
            old = model.get(rel, b"")
            model[rel] = old + (b"\n" if old and not old.endswith(b"\n") else b"") + data
        else:
            assert volume.delete(rel) is (rel in model)
            model.pop(rel, None)
    assert {rel: volume.read(rel) for rel, _ in volume.list()} == model
    for rel, data in model.items():  # and its end, from any size
        for size in (0, 1, 7, len(data) - 1, len(data), len(data) + 5):
            found = volume.tail(rel, size)
            assert found is not None
            end, whole = found
            assert data.endswith(end) and len(end) >= min(max(size, 0), len(data))
            assert whole is (end == data)
    assert volume.tail("never/written.md", 10) is None


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    lines=st.lists(
        st.one_of(
            st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=2).map(
                lambda d: json.dumps(d).encode()
            ),
            st.sampled_from([b"not json", b"[1, 2]", b"", b"\xff\xfe"]),
            st.sampled_from([b"y" * (TAIL_BYTES // 2), b"z" * (TAIL_BYTES + 10)]),  # long lines
        ),
        max_size=8,
    ),
    torn=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
    appended=st.integers(min_value=0, max_value=8),
)
def test_last_record_is_the_last_object_line_of_a_whole_read(
    volume: Volume, lines: list[bytes], torn: bytes, appended: int
) -> None:
    """``last_record`` reads only the end (larger ends while no object is in
    it) and finds what reading the whole file finds; a torn tail is cut."""
    rel = "memory/LTM_AUDIT.jsonl"
    volume.delete(rel)
    head, tail = lines[: len(lines) - appended], lines[len(lines) - appended :]
    volume.write(rel, b"".join(line + b"\n" for line in head) + torn)
    for line in tail:  # parts, on a database
        volume.append(rel, line + b"\n")
    whole = volume.read(rel) or b""
    cut: list[bytes] = []
    expected = last_json_object(whole if whole.endswith(b"\n") or not whole else
                                whole[: whole.rfind(b"\n") + 1])  # fmt: skip
    assert last_record(volume, rel, cut.append) == expected
    if whole and not whole.endswith(b"\n"):
        assert cut == [whole[whole.rfind(b"\n") + 1 :]]
        assert volume.read(rel) == whole[: whole.rfind(b"\n") + 1]
    else:
        assert cut == [] and volume.read(rel) == whole


def test_last_record_of_a_long_log_reads_only_its_end(
    volume: Volume, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant's audit log grows with every fact: the next checkpoint's seq
    comes from its end, not from reading all of it (as on a folder)."""
    rel = "memory/LTM_AUDIT.jsonl"
    volume.write(
        rel, b"".join(b'{"seq": %d, "pad": "%s"}\n' % (n, b"x" * 200) for n in range(5000))
    )
    for n in range(5000, 5010):
        volume.append(rel, b'{"seq": %d}\n' % n)
    ends: list[int] = []
    tail = volume.tail

    def counted(rel: str, size: int) -> tuple[bytes, bool] | None:
        found = tail(rel, size)
        ends.append(len(found[0]) if found else 0)
        return found

    monkeypatch.setattr(volume, "read", lambda rel: pytest.fail(f"read the whole {rel}"))
    monkeypatch.setattr(volume, "tail", counted)
    assert last_record(volume, rel, lambda data: pytest.fail("not torn")) == {"seq": 5009}
    if volume.local is None:  # a folder reads its end by itself (files.last_jsonl_record)
        assert ends and sum(ends) <= 2 * TAIL_BYTES


# -- DiskVolume only ------------------------------------------------------------------


def test_disk_create_is_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moves (of notes, of documents) are a ``create`` and then a ``delete`` of
    the source: the new file's bytes and its name are on disk before it returns."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert DiskVolume(tmp_path / "ws").create("notes/zettel/a.md", b"# A\n")
    folder = str(tmp_path / "ws" / "notes" / "zettel")
    assert folder in synced  # the new name
    assert any(os.path.dirname(path) == folder for path in synced if path != folder)  # the bytes


def test_disk_list_skips_a_symlink_loop(tmp_path: Path) -> None:
    volume = DiskVolume(tmp_path / "ws")
    volume.write("notes/inbox/kept.md", b"# Kept\n")
    os.symlink("loop.md", tmp_path / "ws" / "notes" / "inbox" / "loop.md")
    assert [rel for rel, _ in volume.list("notes/")] == ["notes/inbox/kept.md"]
