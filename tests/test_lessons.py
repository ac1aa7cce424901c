"""Lessons: tool failures and corrections, de-duplication, ranking, durability, bad files."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata import InvalidInput, Memory, NotFound, Source
from memstrata.storage.quarantine import list_quarantine
from memstrata.stores.lessons import (
    KINDS,
    Lesson,
    LessonStore,
    correction_lesson,
    describe_args,
    tool_failure_lesson,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_repeated_tool_failure_is_counted_not_stored_twice(memory: Memory) -> None:
    first = memory.record_tool_failure("read_file", {"path": "/a"}, "No such file: '/a'")
    again = memory.record_tool_failure("read_file", {"path": "/b"}, "No such file: '/b'")
    assert first.hits == 1
    assert again.id == first.id and again.hits == 2
    assert again.updated_at >= first.updated_at and again.created_at == first.created_at
    assert again.wrong == first.wrong  # the first wording is kept
    assert (again.kind, again.tool, again.source) == ("tool_failure", "read_file", Source.TOOL)
    assert "No such file" in again.text and "read_file" in again.instead
    [stored] = memory.lessons.list()
    assert stored == again


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("timeout after 30s on port 8080", "timeout after 5s on port 443"),
        ("object 0xdeadbeef is gone", "object 0x1f is gone"),
        ('key "alpha" missing', 'key "beta" missing'),
        ("commit 3f9a2b7c1d not found", "commit 77aa00bb11 not found"),
        ("no row with `id = 1`", "no row with `id = 2`"),
    ],
)
def test_variable_parts_of_an_error_do_not_make_a_new_lesson(
    memory: Memory, one: str, other: str
) -> None:
    first = memory.record_tool_failure("t", {}, one)
    assert memory.record_tool_failure("t", {}, other).id == first.id


def test_different_tools_or_errors_are_different_lessons(memory: Memory) -> None:
    a = memory.record_tool_failure("read", {}, "No such file: '/a'")
    b = memory.record_tool_failure("write", {}, "No such file: '/a'")
    c = memory.record_tool_failure("read", {}, "Permission denied: '/a'")
    assert len({a.id, b.id, c.id}) == 3
    assert len(memory.lessons.list()) == 3


def test_only_the_first_line_of_a_traceback_is_the_error(memory: Memory) -> None:
    lesson = memory.record_tool_failure("t", [1, 2], "\n  \nValueError: bad\n  File 'x.py'")
    assert lesson.wrong == "t([1, 2]) failed: ValueError: bad"


def test_an_exception_instance_is_accepted(memory: Memory) -> None:
    lesson = memory.record_tool_failure(
        "open", {"path": "/etc/x"}, FileNotFoundError(2, "No such file", "/etc/x")
    )
    assert lesson.wrong.endswith("failed: FileNotFoundError: [Errno 2] No such file: '/etc/x'")
    again = memory.record_tool_failure(
        "open", {"path": "/y"}, FileNotFoundError(2, "No such file", "/y")
    )
    assert again.id == lesson.id and again.hits == 2
    other = memory.record_tool_failure("open", {}, PermissionError(13, "Permission denied"))
    assert other.id != lesson.id


def test_args_of_any_shape_are_described(memory: Memory) -> None:
    class Odd:
        def __repr__(self) -> str:
            return "<odd>"

    lesson = memory.record_tool_failure("t", {"x": Odd(), "y": {1, 2}}, "boom", session="s")
    assert "<odd>" in lesson.wrong and lesson.session == "s"
    assert describe_args({"b": 1, "a": "ü"}) == '{"a": "ü", "b": 1}'
    assert describe_args("x" * 1000) == '"' + "x" * 1000 + '"'  # shortened after redaction
    assert describe_args(["a", "b"]) == '["a", "b"]'  # one line, whatever the input


@pytest.mark.parametrize(
    ("tool", "error", "message"),
    [
        (None, "boom", "tool must be a non-empty string"),
        ("t", 42, "error must be a string or an exception"),
        ("t", None, "error must be a string or an exception"),
        ("t", "", "empty"),
        ("t", " \n\t", "empty"),
    ],
)
def test_bad_tool_failures_are_refused(
    memory: Memory, tool: object, error: object, message: str | None
) -> None:
    with pytest.raises(InvalidInput, match=message):
        memory.record_tool_failure(tool, {}, error)  # type: ignore[arg-type]
    assert memory.lessons.list() == []


@pytest.mark.parametrize("tool", ["", "   "])
def test_an_empty_tool_name_is_named_in_the_error(memory: Memory, tool: str) -> None:
    with pytest.raises(InvalidInput, match="tool must be a non-empty string"):
        memory.record_tool_failure(tool, {}, "boom")


def test_top_lessons_rank_by_hits_then_recency(memory: Memory) -> None:
    once_old = memory.record_tool_failure("a", {}, "first error")
    thrice = memory.record_tool_failure("b", {}, "second error")
    memory.record_tool_failure("b", {}, "second error")
    twice = memory.record_tool_failure("c", {}, "third error")
    memory.record_tool_failure("c", {}, "third error")
    memory.record_tool_failure("b", {}, "second error")
    once_new = memory.record_tool_failure("d", {}, "fourth error")
    ranked = [lesson.id for lesson in memory.lessons.top(10)]
    assert ranked == [thrice.id, twice.id, once_new.id, once_old.id]
    assert [lesson.id for lesson in memory.lessons.top(2)] == [thrice.id, twice.id]
    assert memory.lessons.top(0) == []
    assert [lesson.hits for lesson in memory.lessons.top()] == [3, 2, 1, 1]
    # lessons() is every lesson in the order first recorded
    assert [lesson.id for lesson in memory.lessons.list()] == [
        once_old.id,
        thrice.id,
        twice.id,
        once_new.id,
    ]
    # seen again, the oldest lesson ties with `twice` on hits and wins on recency
    memory.record_tool_failure("a", {}, "first error")
    ranked = [lesson.id for lesson in memory.lessons.top(4)]
    assert ranked == [thrice.id, once_old.id, twice.id, once_new.id]


@pytest.mark.parametrize("k", [-1, 1.5, True, "3", None])
def test_top_lessons_needs_a_whole_number(memory: Memory, k: object) -> None:
    with pytest.raises(InvalidInput, match="k must be a whole number"):
        memory.lessons.top(k)  # type: ignore[arg-type]


def test_forget_lesson(ws: Path) -> None:
    with Memory.open(ws) as memory:
        keep = memory.record_tool_failure("a", {}, "first error")
        drop = memory.record_tool_failure("b", {}, "second error")
        assert memory.lessons.forget(f"  {drop.id} ") == drop
        assert memory.lessons.list() == [keep]
        with pytest.raises(NotFound, match=drop.id):
            memory.lessons.forget(drop.id)
        with pytest.raises(NotFound, match="lnosuchid"):
            memory.lessons.forget("lnosuchid")
        # the same failure later is a new lesson, counted from one
        back = memory.record_tool_failure("b", {}, "second error")
        assert back.id != drop.id and back.hits == 1
    with Memory.open(ws) as memory:
        assert {lesson.id for lesson in memory.lessons.list()} == {keep.id, back.id}


def test_lessons_survive_close_and_open(ws: Path) -> None:
    with Memory.open(ws) as memory:
        failure = memory.record_tool_failure("read", {"path": "/a"}, "No such file: '/a'")
        failure = memory.record_tool_failure("read", {"path": "/b"}, "No such file: '/b'")
        memory.observe("My name is Sarvar.")
        memory.observe("Actually, my name is Sardor, not Sarvar.")
        gone = memory.record_tool_failure("x", {}, "gone soon")
        memory.lessons.forget(gone.id)
        before = memory.lessons.list()
    assert [lesson.kind for lesson in before] == ["tool_failure", "correction"]
    rows = [json.loads(line) for line in (ws / "memory" / "LESSONS.jsonl").read_text().splitlines()]
    assert [Lesson.from_dict(row) for row in rows] == before
    audit = [
        json.loads(line)
        for line in (ws / "memory" / "LESSONS_AUDIT.jsonl").read_text().splitlines()
    ]
    assert [record["op"] for record in audit] == ["lesson.put"] * 4 + ["lesson.del"]
    assert [record["lessons"][0]["hits"] for record in audit[:2]] == [1, 2]
    assert audit[-1]["ids"] == [gone.id]
    lsns = [record["lsn"] for record in audit]
    assert lsns == sorted(set(lsns))
    ltm_audit = (ws / "memory" / "LTM_AUDIT.jsonl").read_text()
    assert "lesson." not in ltm_audit  # each log keeps its own records
    with Memory.open(ws) as memory:
        assert memory.lessons.list() == before
        assert memory.lessons.top(1)[0] == failure
        assert memory.notices == ()


def test_lessons_are_seen_by_another_open_before_a_checkpoint(ws: Path) -> None:
    with Memory.open(ws) as writer, Memory.open(ws) as reader:
        lesson = writer.record_tool_failure("t", {}, "boom")
        assert reader.lessons.list() == [lesson]
        again = reader.record_tool_failure("t", {}, "boom")
        assert writer.lessons.top(1) == [again] and again.hits == 2
        writer.lessons.forget(lesson.id)
        assert reader.lessons.list() == []


def _break_lessons_file(ws: Path) -> None:
    with Memory.open(ws) as memory:
        memory.record_tool_failure("t", {}, "boom")
    with open(ws / "memory" / "LESSONS.jsonl", "ab") as handle:
        handle.write(b'{"id": "lbad", "kind": "nope"}\nnot json at all\n\xff\xfe\n')


def test_a_malformed_lessons_line_is_quarantined_not_fatal(ws: Path) -> None:
    _break_lessons_file(ws)
    with Memory.open(ws) as memory:
        assert [lesson.wrong for lesson in memory.lessons.list()] == ["t({}) failed: boom"]
        notices = memory.notices
        assert memory.status().quarantined == 3
    assert len(notices) == 3
    assert all("memory/LESSONS.jsonl" in n and "set aside" in n for n in notices)
    assert "line 2" in notices[0] and "unknown lesson kind" in notices[0]
    entries = list_quarantine(ws / ".memstrata" / "quarantine")
    assert [e.original for e in entries] == ["memory/LESSONS.jsonl"] * 3
    kept = b"".join((ws / ".memstrata" / "quarantine" / e.stored).read_bytes() for e in entries)
    assert kept == b'{"id": "lbad", "kind": "nope"}\nnot json at all\n\xff\xfe\n'


def test_a_write_after_a_bad_line_leaves_a_clean_lessons_file(ws: Path) -> None:
    _break_lessons_file(ws)
    with Memory.open(ws) as memory:
        memory.record_tool_failure("u", {}, "other")
    with Memory.open(ws) as memory:
        assert memory.notices == ()
        assert len(memory.lessons.list()) == 2


def test_a_bad_lessons_line_is_set_aside_only_once(ws: Path) -> None:
    _break_lessons_file(ws)
    with Memory.open(ws) as memory:
        assert len(memory.notices) == 3
    with Memory.open(ws) as memory:
        assert memory.notices == ()
    assert len(list_quarantine(ws / ".memstrata" / "quarantine")) == 3


# -- the store and the value type -------------------------------------------------------

_ids = st.text("0123456789abcdefghjkmnpqrstvwxyz", min_size=8, max_size=8).map(lambda s: "l" + s)
_times = st.integers(0, 10**9).map(lambda s: T0 + timedelta(seconds=s, microseconds=s % 7))
lessons = st.builds(
    Lesson,
    id=_ids,
    kind=st.sampled_from(KINDS),
    key=st.text(max_size=40),
    wrong=st.text(max_size=80),
    instead=st.text(max_size=80),
    created_at=_times,
    updated_at=_times,
    tool=st.none() | st.text(min_size=1, max_size=20),
    source=st.sampled_from(list(Source)),
    session=st.none() | st.text(min_size=1, max_size=20),
    hits=st.integers(1, 10**6),
)


@given(lessons)
def test_lesson_to_dict_from_dict_round_trip(lesson: Lesson) -> None:
    assert Lesson.from_dict(lesson.to_dict()) == lesson
    assert Lesson.from_dict(json.loads(json.dumps(lesson.to_dict()))) == lesson


@given(st.lists(lessons, max_size=10, unique_by=lambda lesson: lesson.id))
def test_lessons_file_round_trip(items: list[Lesson]) -> None:
    store = LessonStore()
    store.reset(items)
    parsed, bad = LessonStore.parse(store.render())
    assert bad == []
    assert parsed == list(store.lessons.values())


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {},
        {"id": "l1", "kind": "tool_failure"},
        {"id": "l1", "kind": "other", "key": "", "wrong": "", "instead": ""},
    ],
)
def test_a_malformed_lesson_is_invalid_input(data: object) -> None:
    with pytest.raises(InvalidInput, match="malformed lesson"):
        Lesson.from_dict(data)


def test_lesson_keys_blank_what_varies() -> None:
    a = tool_failure_lesson("t", "{}", "HTTP 404 for 'x'", at=T0, session=None)
    b = tool_failure_lesson("t", "{}", "http 500 for 'y'.", at=T0, session=None)
    assert a.key == b.key
    one = correction_lesson("My name is Sarvar.", "It is Sardor", at=T0, session="s")
    two = correction_lesson("my name is sarvar", "No, Sardor", at=T0, session=None)
    assert one.key == two.key and one.source is Source.USER
    assert one.wrong == "believed: My name is Sarvar."
    assert one.instead == "the user corrected it: It is Sardor"
