"""The write-ahead journal: replay, torn tails, corruption, checkpoints, group commit."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.storage.journal import Journal, decode, encode, scan


def _open(path: Path, **kwargs: Any) -> Journal:
    journal = Journal(path, **kwargs)
    journal.open(base_lsn=0)
    return journal


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
payloads = st.dictionaries(
    st.text(min_size=1, max_size=10).filter(lambda key: key not in {"lsn", "op", "ts"}),
    json_values,
    max_size=4,
)


@settings(
    max_examples=60,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(st.lists(payloads, max_size=15))
def test_replay_returns_every_record_in_order(tmp_path: Path, batch: list[dict[str, Any]]) -> None:
    path = tmp_path / f"j{time.perf_counter_ns()}.wal"
    writer = _open(path)
    written = [writer.append("test.op", payload, sync=False) for payload in batch]
    writer.close()
    replayed = Journal(path).open(base_lsn=0)
    assert [r.data for r in replayed] == [r.data for r in written]
    assert [r.lsn for r in replayed] == list(range(1, len(batch) + 1))


def test_line_format_detects_any_flipped_byte() -> None:
    line = encode({"lsn": 1, "op": "x", "text": "Sardor"}).rstrip(b"\n")
    assert decode(line).data["text"] == "Sardor"
    for position in range(len(line)):
        damaged = bytearray(line)
        damaged[position] ^= 0x01
        try:
            record = decode(bytes(damaged))
        except (ValueError, UnicodeDecodeError):
            continue
        raise AssertionError(f"flip at {position} went unnoticed: {record}")


def test_torn_tail_is_cut_off_quarantined_and_never_glued_to_a_new_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.wal"
    writer = _open(path)
    writer.append("test.op", {"n": 1}, sync=True)
    writer.close()
    torn = encode({"lsn": 2, "op": "test.op", "n": 2})[:-7]
    with open(path, "ab") as handle:
        handle.write(torn)
    kept: list[tuple[bytes, str]] = []
    journal = Journal(path, on_quarantine=lambda data, reason: kept.append((data, reason)))
    records = journal.open(base_lsn=0)
    assert [r.data["n"] for r in records] == [1]
    assert [p.kind for p in journal.problems] == ["torn"]
    assert kept == [(torn, kept[0][1])] and "torn" in kept[0][1]
    journal.append("test.op", {"n": 3}, sync=True)
    journal.close()
    again = Journal(path)
    assert [r.data["n"] for r in again.open(base_lsn=0)] == [1, 3]
    assert again.problems == []


def test_corrupt_middle_record_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    writer = _open(path)
    for n in range(3):
        writer.append("test.op", {"n": n}, sync=True)
    writer.close()
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"n":1', b'"n":7')
    path.write_bytes(b"\n".join(lines))
    journal = Journal(path)
    assert [r.data["n"] for r in journal.open(base_lsn=0)] == [0, 2]
    [problem] = journal.take_corrupt()
    assert problem.reason == "checksum mismatch"
    assert b'"n":7' in problem.data
    report = scan(path)
    assert [r.data["n"] for r in report.records] == [0, 2]
    assert [p.kind for p in report.problems] == ["corrupt"]


def test_reset_starts_a_new_file_and_readers_drain_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    writer = _open(path)
    reader = _open(path)
    writer.append("test.op", {"n": 1}, sync=True)
    writer.append("test.op", {"n": 2}, sync=True)
    writer.reset(2, {"note": "checkpoint"})
    writer.append("test.op", {"n": 3}, sync=True)
    assert [r.data["n"] for r in reader.read_new()] == [1, 2, 3]
    assert reader.header["note"] == "checkpoint"
    assert reader.base_lsn == 2
    assert [r.lsn for r in Journal(path).open(base_lsn=0)] == [3]


def test_group_commit_syncs_after_n_records(tmp_path: Path) -> None:
    journal = _open(tmp_path / "journal.wal", flush_every_updates=3, flush_interval_seconds=60)
    journal.append("test.op", {}, sync=False)
    journal.append("test.op", {}, sync=False)
    assert journal.unsynced == 2
    journal.append("test.op", {}, sync=False)
    assert journal.unsynced == 0
    journal.append("test.op", {}, sync=True)
    assert journal.unsynced == 0
    journal.close()


def test_group_commit_syncs_after_the_interval(tmp_path: Path) -> None:
    journal = _open(tmp_path / "journal.wal", flush_every_updates=100, flush_interval_seconds=0.05)
    journal.append("test.op", {}, sync=False)
    assert journal.unsynced == 1
    deadline = time.monotonic() + 5
    while journal.unsynced and time.monotonic() < deadline:
        time.sleep(0.01)
    assert journal.unsynced == 0
    journal.close()


def test_a_deleted_journal_is_recreated_at_the_known_position(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    journal = _open(path)
    journal.append("test.op", {}, sync=True)
    path.unlink()
    assert journal.read_new(repair=True) == []
    record = journal.append("test.op", {}, sync=True)
    assert record.lsn == 2
    assert [r.lsn for r in Journal(path).open(base_lsn=0)] == [2]
