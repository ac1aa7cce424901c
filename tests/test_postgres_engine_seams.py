"""The engine's three seams on PostgreSQL (``memstrata.postgres``): the journal
(``PostgresJournal``), the writer lock (``PostgresLock``) and the files
(``PostgresVolume`` beyond the shared contract), bound together by
``TenantFiles``: one write under the lock is one transaction."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memstrata
import postgres_server
from memstrata.errors import BackendUnavailable, Conflict, InvalidInput, NotFound, StorageError
from memstrata.postgres import volume as volume_module
from memstrata.postgres.journal import PostgresJournal
from memstrata.postgres.lock import PostgresLock
from memstrata.postgres.tenant import TenantFiles
from memstrata.postgres.volume import PostgresVolume

NEW_TABLES = (
    "memstrata_volume",
    "memstrata_volume_parts",
    "memstrata_journal",
    "memstrata_journal_state",
)


@pytest.fixture
def tenant(postgres_url: str) -> str:
    return postgres_server.tenant()


@pytest.fixture
def files(postgres_url: str, tenant: str) -> Iterator[TenantFiles]:
    opened = TenantFiles(postgres_url, tenant, timeout=10)
    yield opened
    opened.close()


@pytest.fixture
def other(postgres_url: str, tenant: str) -> Iterator[TenantFiles]:
    """The same tenant seen by another writer (as another process would)."""
    opened = TenantFiles(postgres_url, tenant, timeout=10)
    yield opened
    opened.close()


# -- the journal ---------------------------------------------------------------------


def test_records_one_writer_appends_the_other_reads(files: TenantFiles, other: TenantFiles) -> None:
    assert files.journal.open(base_lsn=0) == [] and other.journal.open(base_lsn=0) == []
    payload = {"items": [{"id": "m1", "text": "naïve ☕", "z": 1, "a": [1, {"y": None}]}]}
    with files.lock:
        first = files.journal.append("ltm.put", payload, sync=True)
    assert first.lsn == 1 and list(first.data) == ["lsn", "op", "ts", "items"]
    [seen] = other.journal.read_new()
    assert seen == first and list(seen.data["items"][0]) == ["id", "text", "z", "a"]
    with other.lock:
        assert other.journal.read_new(repair=True) == []
        second = other.journal.append("ltm.delete", {"ids": ["m1"]}, sync=False)
    assert second.lsn == 2
    assert files.journal.read_new() == [second]
    assert files.journal.records == other.journal.records == [first, second]
    assert files.journal.last_lsn == other.journal.last_lsn == 2
    assert files.journal.unsynced == 0 and files.journal.take_corrupt() == []
    assert files.journal.problems == [] and files.journal.size > 0


def test_a_reset_carries_its_header_and_reading_past_it_is_a_gap(
    files: TenantFiles, other: TenantFiles
) -> None:
    files.journal.open(base_lsn=0)
    other.journal.open(base_lsn=0)
    header_before = other.journal.header
    with files.lock:
        for n in range(2):
            files.journal.append("op", {"n": n}, sync=False)
    assert len(other.journal.read_new()) == 2
    assert other.journal.read_new() == [] and other.journal.header is header_before
    with files.lock:
        files.journal.reset(2, {"markdown": {"sha256": "abc", "size": 3}})
    assert other.journal.read_new() == []
    assert other.journal.header["markdown"] == {"sha256": "abc", "size": 3}
    assert other.journal.header is not header_before  # a new header: taken in once
    assert other.journal.base_lsn == 2 and other.journal.records == []
    assert not other.journal.gap  # it had read everything the reset folded in
    with files.lock:  # 3 and 4 are checkpointed before the other reads them
        files.journal.append("op", {"n": 3}, sync=False)
        files.journal.append("op", {"n": 4}, sync=False)
        files.journal.reset(4, {"markdown": None})
        fifth = files.journal.append("op", {"n": 5}, sync=False)
    assert other.journal.read_new() == [fifth]
    assert other.journal.gap and other.journal.records == [fifth]
    assert other.journal.base_lsn == 4 and other.journal.last_lsn == 5


def test_a_fresh_reader_opens_on_the_records_since_the_last_reset(
    postgres_url: str, files: TenantFiles
) -> None:
    files.journal.open(base_lsn=7)
    with files.lock:
        files.journal.append("op", {"n": 8}, sync=False)
        files.journal.reset(8, {"k": "v"})
        nine = files.journal.append("op", {"n": 9}, sync=False)
    later = PostgresJournal(postgres_url, files.tenant)
    try:
        assert later.open(base_lsn=0) == [nine]
        assert later.header["k"] == "v" and later.base_lsn == 8 and not later.gap
    finally:
        later.close()


def test_an_append_behind_the_database_is_refused(files: TenantFiles, other: TenantFiles) -> None:
    files.journal.open(base_lsn=0)
    other.journal.open(base_lsn=0)
    with files.lock:
        files.journal.append("op", {}, sync=False)
    with other.lock:  # not caught up: lsn 1 is taken
        with pytest.raises(Conflict):
            other.journal.append("op", {}, sync=False)
        other.volume.write("a.md", b"still written\n")  # the failed call undid only itself
    assert files.volume.read("a.md") == b"still written\n"
    assert other.journal.last_lsn == 0 and other.journal.records == []


def test_a_record_that_cannot_be_stored_is_invalid_input(files: TenantFiles) -> None:
    files.journal.open(base_lsn=0)
    with files.lock, pytest.raises(InvalidInput):
        files.journal.append("op", {"text": "\ud800"}, sync=False)
    assert files.journal.last_lsn == 0


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
    steps=st.lists(
        st.tuples(st.sampled_from([0, 1]), st.sampled_from(["append", "reset", "read"])),
        max_size=14,
    )
)
def test_two_writers_never_miss_a_record_unless_told(
    postgres_url: str, steps: list[tuple[int, str]]
) -> None:
    """Whatever two writers do (catching up under the lock, as the engine
    does), each reader gets every record once, in order, except those a reset
    folded in before it read them, and then ``gap`` says so."""
    tenant = postgres_server.tenant()
    writers = [TenantFiles(postgres_url, tenant) for _ in range(2)]
    try:
        got: list[set[int]] = [set(), set()]
        told: list[int] = [0, 0]  # the base a gap was reported at
        appended: list[int] = []
        base = 0

        def read(who: int) -> None:
            journal = writers[who].journal
            seen = journal.last_lsn
            lsns = [record.lsn for record in journal.read_new()]
            assert lsns == sorted(lsns) and all(lsn > seen for lsn in lsns)
            assert not set(lsns) & got[who]
            got[who].update(lsns)
            if journal.gap:
                told[who] = journal.base_lsn
                journal.gap = False
            assert [r.lsn for r in journal.records] == [lsn for lsn in appended if lsn > base]
            missed = set(appended) - got[who]
            assert all(lsn <= told[who] for lsn in missed), (missed, told[who])

        for journal in (w.journal for w in writers):
            journal.open(base_lsn=0)
        for who, action in steps:
            files = writers[who]
            if action == "read":
                read(who)
                continue
            with files.lock:
                read(who)
                if action == "append":
                    lsn = files.journal.append("op", {"who": who}, sync=False).lsn
                    appended.append(lsn)
                    got[who].add(lsn)
                else:
                    base = files.journal.last_lsn
                    files.journal.reset(base, {"by": who})
        for who in (0, 1):
            read(who)
            assert writers[who].journal.header.get("by", who) in (0, 1)
        assert appended == list(range(1, len(appended) + 1))
    finally:
        for files in writers:
            files.close()


# -- the lock ------------------------------------------------------------------------


def test_writes_under_the_lock_are_seen_by_others_only_at_its_release(
    files: TenantFiles, other: TenantFiles
) -> None:
    files.journal.open(base_lsn=0)
    other.journal.open(base_lsn=0)
    with files.lock:
        with files.lock:  # re-entrant
            files.volume.write("MEMORY.md", b"# one\n")
            files.journal.append("op", {}, sync=True)
        assert files.lock.held
        files.volume.append("sessions/s.jsonl", b"{}\n")
        assert files.volume.read("MEMORY.md") == b"# one\n"  # its own transaction sees it
        assert other.volume.read("MEMORY.md") is None
        assert other.volume.list() == [] and other.journal.read_new() == []
    assert not files.lock.held
    assert [rel for rel, _ in other.volume.list()] == ["MEMORY.md", "sessions/s.jsonl"]
    assert [r.lsn for r in other.journal.read_new()] == [1]


def test_another_thread_does_not_join_the_holders_transaction(files: TenantFiles) -> None:
    files.journal.open(base_lsn=0)
    seen: list[object] = []

    def look() -> None:
        seen.append(files.volume.read("a.md"))
        seen.append(files.journal.read_new())
        seen.append(files.lock.joined())

    with files.lock:
        files.volume.write("a.md", b"a\n")
        files.journal.append("op", {}, sync=False)
        thread = threading.Thread(target=look)
        thread.start()
        thread.join()
        assert files.lock.joined()
    assert seen == [None, [], False]
    look()
    assert seen[3:] == [b"a\n", [], False]  # its own append: nothing new to it
    with files.lock:  # a reset not committed yet: RAM is ahead of what others see
        files.journal.reset(1, {"markdown": "new"})
        thread = threading.Thread(target=look)
        thread.start()
        thread.join()
        assert files.journal.header["markdown"] == "new" and files.journal.base_lsn == 1
        assert files.journal.records == []
    assert seen[6:] == [b"a\n", [], False]


def test_threads_of_one_process_take_turns(files: TenantFiles) -> None:
    order: list[str] = []
    holding = threading.Event()
    done = threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        with files.lock:
            order.append("first in")
            holding.set()
            done.wait(10)
            files.volume.write("x.md", b"first\n")
            order.append("first out")

    def wait_turn() -> None:
        try:
            with files.lock:
                order.append("second in")
                assert files.volume.read("x.md") == b"first\n"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    first = threading.Thread(target=hold)
    first.start()
    holding.wait(10)
    files.lock.timeout = 0.05
    with pytest.raises(Conflict, match="busy in this process"), files.lock:
        pass
    files.lock.timeout = 10
    second = threading.Thread(target=wait_turn)
    second.start()
    done.set()
    first.join()
    second.join()
    assert errors == []
    assert order == ["first in", "first out", "second in"]


def test_a_second_writer_times_out_with_conflict(postgres_url: str, files: TenantFiles) -> None:
    for timeout in (0.2, 0):
        waiting = PostgresLock(postgres_url, files.tenant, timeout=timeout)
        try:
            with files.lock:
                with pytest.raises(Conflict, match="locked by another writer"), waiting:
                    pass
                assert not waiting.held
            with waiting:  # free again
                assert waiting.held
        finally:
            waiting.close()


def test_a_python_exception_inside_still_commits(files: TenantFiles, other: TenantFiles) -> None:
    files.journal.open(base_lsn=0)
    with pytest.raises(KeyError), files.lock:
        files.volume.write("a.md", b"kept\n")
        files.journal.append("op", {}, sync=False)
        raise KeyError("a bug after the write")
    assert other.volume.read("a.md") == b"kept\n"
    assert other.journal.open(base_lsn=0)[0].lsn == 1
    assert files.lock.lost == 0


def test_an_aborted_transaction_is_rolled_back_and_the_journal_takes_its_records_back(
    files: TenantFiles, other: TenantFiles
) -> None:
    files.journal.open(base_lsn=0)
    with files.lock:
        files.journal.append("op", {"n": 1}, sync=False)
    calls: list[int] = []
    files.lock.on_abort.append(lambda: calls.append(files.lock.lost))
    with pytest.raises(StorageError, match="aborted"), files.lock:
        files.volume.write("a.md", b"lost\n")
        files.journal.append("op", {"n": 2}, sync=False)
        files.journal.reset(2, {"markdown": "lost"})
        conn = files.lock._conn  # a statement outside the seams' savepoints fails
        assert conn is not None
        with contextlib.suppress(psycopg.Error):
            conn.execute("SELECT 1/0")
    assert calls == [1] and files.lock.lost == 1
    journal = files.journal
    assert journal.gap and journal.last_lsn == 1 and [r.lsn for r in journal.records] == [1]
    assert journal.base_lsn == 0 and "markdown" not in journal.header
    assert other.volume.read("a.md") is None
    assert [r.lsn for r in other.journal.open(base_lsn=0)] == [1]
    with files.lock:  # usable again, and the lsn it hands out is the database's next
        assert files.journal.append("op", {"n": 2}, sync=False).lsn == 2


def test_a_commit_that_fails_is_storage_error_and_rolls_ram_back(
    files: TenantFiles, other: TenantFiles
) -> None:
    files.journal.open(base_lsn=0)
    with pytest.raises(StorageError, match="cannot commit"), files.lock:
        files.journal.append("op", {}, sync=False)
        with files.lock.connection("find the backend") as conn:
            pid = conn.info.backend_pid
        with psycopg.connect(postgres_server.admin_url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert files.lock.lost == 1 and files.journal.gap and files.journal.last_lsn == 0
    assert other.journal.open(base_lsn=0) == []
    with files.lock:  # a fresh connection
        files.journal.gap = False
        assert files.journal.append("op", {}, sync=False).lsn == 1


def test_a_connection_lost_under_the_lock_is_never_a_silent_commit(
    files: TenantFiles, other: TenantFiles
) -> None:
    """The connection dies, a call fails and its caller carries on (as
    record_turn does with its daily note): the release must not pass for a
    commit (the driver leaves a broken connection's block without a word)."""
    files.journal.open(base_lsn=0)
    with pytest.raises(StorageError, match="cannot commit"), files.lock:
        files.journal.append("op", {}, sync=False)
        files.volume.write("a.md", b"lost\n")
        with files.lock.connection("find the backend") as conn:
            pid = conn.info.backend_pid
        with psycopg.connect(postgres_server.admin_url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(BackendUnavailable):
            files.volume.write("b.md", b"x\n")  # its caller keeps going
    assert files.lock.lost == 1 and files.journal.gap and files.journal.last_lsn == 0
    assert other.volume.read("a.md") is None and other.journal.open(base_lsn=0) == []
    with files.lock:  # a fresh connection
        assert files.journal.append("op", {}, sync=False).lsn == 1


def test_a_closed_lock_is_not_taken_again(postgres_url: str, tenant: str) -> None:
    lock = PostgresLock(postgres_url, tenant)
    lock.close()
    with pytest.raises(Conflict, match="closed"), lock:
        pass


def test_a_seam_bound_to_a_lock_of_another_tenant_is_refused(
    postgres_url: str, files: TenantFiles
) -> None:
    with pytest.raises(InvalidInput):
        PostgresVolume(postgres_url, postgres_server.tenant(), lock=files.lock)
    with pytest.raises(InvalidInput):
        PostgresJournal("postgresql://elsewhere/db", files.tenant, lock=files.lock)


def test_without_the_tenant_set_no_row_of_the_new_tables_is_seen(
    postgres_url: str, files: TenantFiles
) -> None:
    files.journal.open(base_lsn=0)
    with files.lock:
        files.volume.write("a.md", b"a")
        files.volume.append("a.md", b"b")
        files.journal.append("op", {}, sync=False)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for table in NEW_TABLES:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)  # noqa: S608
        with conn.transaction():
            conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (files.tenant,))
            for table in NEW_TABLES:
                row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
                assert row is not None and row[0] >= 1


# -- the volume, beyond the contract -------------------------------------------------


def test_an_append_adds_a_part_and_a_write_folds_them(
    files: TenantFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    volume = files.volume

    def parts() -> int:
        with files.lock.connection("count") as conn:
            row = conn.execute("SELECT count(*) FROM memstrata_volume_parts").fetchone()
        assert row is not None
        return int(row[0])

    volume.append("t.jsonl", b"1\n", header=b"# h\n")
    stats = {volume.stat("t.jsonl")}
    for n in range(2, 5):
        volume.append("t.jsonl", b"%d\n" % n)
        stats.add(volume.stat("t.jsonl"))
    assert parts() == 3 and len(stats) == 4
    assert volume.read("t.jsonl") == b"# h\n1\n2\n3\n4\n"
    monkeypatch.setattr(volume_module, "FOLD_PARTS", 4)
    volume.append("t.jsonl", b"5")  # the fourth part: all folded into the content
    assert parts() == 0 and volume.read("t.jsonl") == b"# h\n1\n2\n3\n4\n5"
    volume.append("t.jsonl", b"6\n")
    assert volume.read("t.jsonl") == b"# h\n1\n2\n3\n4\n5\n6\n"
    volume.write("t.jsonl", b"new\n")
    assert parts() == 0 and volume.read("t.jsonl") == b"new\n"
    stat = volume.stat("t.jsonl")
    assert stat is not None and stat.size == 4
    volume.append("t.jsonl", b"")
    assert volume.stat("t.jsonl") not in {stat, None}  # still a write


def test_the_same_bytes_written_again_are_a_new_stat(files: TenantFiles) -> None:
    files.volume.write("a.md", b"same\n")
    before = files.volume.stat("a.md")
    files.volume.write("a.md", b"same\n")
    assert files.volume.stat("a.md") != before
    assert not files.volume.swap("a.md", b"x\n", before).done
    assert not files.volume.swap("b.md", b"x\n", before).done  # none there, one expected


def test_list_sorts_by_code_point_and_takes_a_prefix_literally(files: TenantFiles) -> None:
    names = ["a_b/x.md", "axb/y.md", "a%/z.md", "B.md", "a.md", "é.md", "z.md", "a/b.md", "a0"]
    for name in names:
        files.volume.write(name, name.encode())
    assert [rel for rel, _ in files.volume.list()] == sorted(names)
    assert [rel for rel, _ in files.volume.list("a_b/")] == ["a_b/x.md"]
    assert [rel for rel, _ in files.volume.list("a%/")] == ["a%/z.md"]
    assert [rel for rel, _ in files.volume.list("a/")] == ["a/b.md"]
    assert files.volume.local is None and files.tenant in files.volume.where


def test_rename_keeps_the_file_and_moves_its_parts(files: TenantFiles) -> None:
    files.volume.write("a.md", b"one\n")
    files.volume.append("a.md", b"two\n")
    stat = files.volume.stat("a.md")
    files.volume.rename("a.md", "b/a.md")
    assert files.volume.read("b/a.md") == b"one\ntwo\n" and files.volume.read("a.md") is None
    assert files.volume.stat("b/a.md") == stat
    files.volume.rename("b/a.md", "b/a.md")
    with pytest.raises(NotFound):
        files.volume.rename("a.md", "c.md")


# -- a killed writer -----------------------------------------------------------------

CHILD = """
import sys, time
from memstrata.postgres.tenant import TenantFiles
files = TenantFiles(sys.argv[1], sys.argv[2], timeout=10)
files.journal.open(base_lsn=0)
files.lock.__enter__()
files.volume.write("MEMORY.md", b"half\\n")
files.journal.append("op", {"n": 1}, sync=True)
print("holding", flush=True)
time.sleep(120)
"""


@pytest.mark.slow
def test_a_killed_holder_frees_the_lock_and_leaves_nothing(postgres_url: str, tenant: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(memstrata.__file__).parents[1])}
    command = [sys.executable, "-c", CHILD, postgres_url, tenant]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as p:
        assert p.stdout is not None and p.stderr is not None
        try:
            line = p.stdout.readline()
            assert line == b"holding\n", p.stderr.read().decode()
            busy = PostgresLock(postgres_url, tenant, timeout=0)
            with pytest.raises(Conflict), busy:
                pass
            busy.close()
        finally:
            p.send_signal(signal.SIGKILL)
        p.wait()
    files = TenantFiles(postgres_url, tenant, timeout=30)
    try:
        with files.lock:
            assert files.volume.read("MEMORY.md") is None and files.volume.list() == []
            assert files.journal.open(base_lsn=0) == []
    finally:
        files.close()


@pytest.mark.slow
def test_importing_the_seams_imports_no_driver() -> None:
    code = (
        "import sys, memstrata.postgres.tenant\n"
        "assert not {'psycopg', 'psycopg_pool', 'pgvector'} & set(sys.modules), sys.modules"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(memstrata.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
