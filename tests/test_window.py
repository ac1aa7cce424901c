"""The conversation window: Qanot's 40 / 50 / 60 % thresholds, truncation, recovery."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.context.window import (
    SNIPPED_TEMPLATE,
    TRUNCATION_TEMPLATE,
    ContextWindow,
    Message,
    WindowEvent,
    WindowSettings,
    asks_where_we_were,
    buffer_block,
    compacted_count,
    compaction_marker,
    truncate_tool_result,
)
from memstrata.errors import InvalidInput, StorageError
from memstrata.storage.volume import DiskVolume

T0 = datetime(2025, 1, 15, 14, 30, tzinfo=UTC)
SEED_MARKER_12 = (
    "[CONTEXT COMPACTION: 12 earlier messages were removed to free context space.\n"
    "Recent conversation preserved below. Check your workspace files\n"
    "(SESSION-STATE.md, memory/) for any important context from earlier.]"
)


def _text(tokens: int, tag: str = "") -> str:
    """A text of exactly ``tokens`` estimated tokens (4 characters each), starting with ``tag``."""
    return (tag + "." * (4 * tokens))[: 4 * tokens]


def _msg(role: str, tokens: int, name: str) -> Message:
    return Message(role, _text(tokens, name), name=name)


def _kinds(events: list[WindowEvent]) -> list[str]:
    return [event.kind for event in events]


def _names(messages: list[Message]) -> list[str | None]:
    return [message.name for message in messages]


# -- values and settings ---------------------------------------------------------


def test_the_compaction_marker_is_the_seeds_text() -> None:
    assert compaction_marker(12) == SEED_MARKER_12
    assert compacted_count(Message("system", SEED_MARKER_12)) == 12
    assert compacted_count(Message("user", SEED_MARKER_12)) is None
    assert compacted_count(Message("system", "hello")) is None


def test_messages_need_a_known_role_and_text() -> None:
    assert Message("tool", "42", name="calc").name == "calc"
    with pytest.raises(InvalidInput, match="role"):
        Message("bot", "hi")
    with pytest.raises(InvalidInput, match="content"):
        Message("user", 42)  # type: ignore[arg-type]


def test_the_default_settings_are_qanots() -> None:
    s = WindowSettings()
    assert (s.snip_tool_results_at, s.working_buffer_at, s.compact_at, s.compact_to) == (
        0.40,
        0.50,
        0.60,
        0.35,
    )
    assert (s.keep_first, s.keep_last, s.tool_result_max_chars) == (2, 4, 8000)
    assert (s.truncate_head, s.truncate_tail) == (0.70, 0.20)
    assert WindowSettings(compact_at=1.0, truncate_head=0.7, truncate_tail=0.3).compact_at == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"snip_tool_results_at": 0},
        {"snip_tool_results_at": -0.1},
        {"working_buffer_at": 1.5},
        {"compact_at": 1.2},
        {"compact_at": "0.6"},
        {"compact_at": True},
        {"compact_to": 0.6},
        {"compact_to": 0.7},
        {"compact_to": 0},
        {"keep_first": -1},
        {"keep_last": -1},
        {"keep_last": 2.5},
        {"tool_result_max_chars": 0},
        {"truncate_head": 0},
        {"truncate_tail": 1.1},
        {"truncate_head": 0.9, "truncate_tail": 0.2},
    ],
)
def test_nonsense_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        WindowSettings(**bad)


def test_a_window_needs_a_positive_limit() -> None:
    with pytest.raises(InvalidInput, match="limit_tokens"):
        ContextWindow(0)


# -- tool-result truncation -------------------------------------------------------


def test_a_long_tool_result_keeps_70_percent_head_and_20_percent_tail() -> None:
    text = (string.ascii_letters * 200)[:10_000]
    cut = truncate_tool_result(text)
    marker = "\n\n[... 2800 characters truncated ...]\n\n"
    assert cut == text[:5600] + marker + text[-1600:]
    assert len(cut) == 5600 + len(marker) + 1600


def test_truncation_starts_past_max_chars() -> None:
    assert truncate_tool_result("a" * 8000) == "a" * 8000
    cut = truncate_tool_result("b" * 8001)
    assert cut == "b" * 5600 + TRUNCATION_TEMPLATE.format(removed=801) + "b" * 1600


def test_truncation_refuses_bad_arguments() -> None:
    with pytest.raises(InvalidInput):
        truncate_tool_result("abc", max_chars=0)
    with pytest.raises(InvalidInput):
        truncate_tool_result("abc", head=0.9, tail=0.2)


@given(
    text=st.text(alphabet="abcxyz\n", max_size=3000),
    max_chars=st.integers(1, 2000),
    head_pct=st.integers(1, 99),
    tail_data=st.data(),
)
def test_truncation_arithmetic_is_exact(
    text: str, max_chars: int, head_pct: int, tail_data: st.DataObject
) -> None:
    tail_pct = tail_data.draw(st.integers(1, 100 - head_pct))
    cut = truncate_tool_result(text, max_chars, head_pct / 100, tail_pct / 100)
    assert len(cut) <= len(text)
    if len(text) <= max_chars:
        assert cut == text
        return
    keep_head = max_chars * head_pct // 100
    keep_tail = max_chars * tail_pct // 100
    removed = len(text) - keep_head - keep_tail
    expected = (
        text[:keep_head]
        + TRUNCATION_TEMPLATE.format(removed=removed)
        + text[len(text) - keep_tail :]
    )
    assert cut == (expected if len(expected) < len(text) else text)


def test_the_window_truncates_tool_results_on_entry() -> None:
    window = ContextWindow(100_000)
    text = "r" * 20_000
    events = window.add(Message("tool", text, name="grep"))
    assert _kinds(events) == ["truncated"]
    assert window.messages == [Message("tool", truncate_tool_result(text), name="grep")]
    assert events[0].tokens_before == 5000
    assert events[0].tokens_after == window.tokens
    assert window.add(Message("user", text)) == []  # only tool results are cut


# -- 40 %: old tool results are snipped -----------------------------------------


def test_at_40_percent_old_tool_results_are_snipped() -> None:
    window = ContextWindow(1000)
    for message in [
        _msg("system", 10, "m0"),
        _msg("user", 10, "m1"),
        _msg("assistant", 10, "m2"),
        _msg("tool", 300, "m3"),
        _msg("assistant", 20, "m4"),
        _msg("user", 20, "m5"),
        _msg("assistant", 20, "m6"),
    ]:
        assert window.add(message) == []
    assert window.tokens == 390
    events = window.add(_msg("user", 20, "m7"))
    placeholder = SNIPPED_TEMPLATE.format(chars=1200)
    size = (len(placeholder) + 3) // 4
    assert events == [WindowEvent("snipped", 1, 410, 410 - 300 + size, "1 old tool result snipped")]
    assert window.messages[3] == Message("tool", placeholder, name="m3")
    assert window.tokens == 410 - 300 + size
    assert window.events == events


def test_recent_tool_results_are_not_snipped() -> None:
    window = ContextWindow(1000)
    window.add(_msg("system", 350, "m0"))
    window.add(_msg("user", 10, "m1"))
    window.add(_msg("assistant", 10, "m2"))
    assert window.add(_msg("tool", 40, "m3")) == []  # 41 %, but among the last 4
    assert window.messages[3].content == _text(40, "m3")


# -- 50 %: the working buffer -----------------------------------------------------

BUFFER_AFTER_FIRST_EXCHANGE = """\
# Working Buffer (Danger Zone Log)
**Status:** ACTIVE
**Started:** 2025-01-15T14:30:00+00:00

---

## [2025-01-15 14:30:00] Human
Can you refactor the database module?

## [2025-01-15 14:30:00] Agent (summary)
Refactored the database module to use connection pooling.

"""


def _buffer_window(tmp_path: Path, limit: int = 100) -> tuple[ContextWindow, Path]:
    path = tmp_path / "memory" / "working-buffer.md"
    window = ContextWindow(limit, buffer=DiskVolume(tmp_path), clock=lambda: T0)
    window.add(_msg("system", 30, "sys"))
    return window, path


def test_at_50_percent_each_exchange_goes_to_the_working_buffer(tmp_path: Path) -> None:
    window, path = _buffer_window(tmp_path)
    assert window.add(Message("user", "Can you refactor the database module?")) == []
    reply = Message("assistant", "Refactored the database module to use connection pooling.")
    events = window.add(reply)
    assert _kinds(events) == ["buffered"]
    assert (events[0].count, events[0].tokens_before, events[0].tokens_after) == (2, 40, 55)
    assert path.read_text(encoding="utf-8") == BUFFER_AFTER_FIRST_EXCHANGE
    assert window.messages[-1] == reply

    window.add(Message("user", "And the   tests?\n"))
    long_reply = "word " * 100
    assert _kinds(window.add(Message("assistant", long_reply))) == ["buffered"]
    shortened = ("word " * 60)[:297].rstrip() + "..."
    assert path.read_text(encoding="utf-8") == (
        BUFFER_AFTER_FIRST_EXCHANGE
        + "## [2025-01-15 14:30:00] Human\nAnd the tests?\n\n"
        + f"## [2025-01-15 14:30:00] Agent (summary)\n{shortened}\n\n"
    )
    assert len(shortened) == 300


def test_below_50_percent_nothing_is_buffered(tmp_path: Path) -> None:
    window, path = _buffer_window(tmp_path, limit=1000)
    window.add(Message("user", "Can you refactor the database module?"))
    assert window.add(Message("assistant", "Done.")) == []
    assert not path.exists()


def test_a_user_message_is_buffered_once_per_exchange(tmp_path: Path) -> None:
    window, path = _buffer_window(tmp_path, limit=60)
    window.add(Message("user", "Look it up"))
    window.add(Message("assistant", ""))  # a bare tool call: nothing to keep
    window.add(Message("tool", "result", name="search"))
    window.add(Message("assistant", "Found it."))
    window.add(Message("assistant", "Anything else?"))
    body = path.read_text(encoding="utf-8").split("---\n\n", 1)[1]
    assert body == (
        buffer_block("Human", "Look it up", T0)
        + buffer_block("Agent (summary)", "Found it.", T0)
        + buffer_block("Agent (summary)", "Anything else?", T0)
    )


def test_without_a_buffer_path_nothing_is_written(tmp_path: Path) -> None:
    window = ContextWindow(60)
    window.add(_msg("user", 30, "u"))
    assert window.add(_msg("assistant", 10, "a")) == []


def test_a_failed_buffer_write_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "memory").write_text("a file where the folder should be")
    window, _ = _buffer_window(tmp_path)
    window.add(Message("user", "hello"))
    before = window.messages
    with pytest.raises(StorageError, match="working buffer"):
        window.add(_msg("assistant", 30, "reply"))
    assert window.messages == before


# -- 60 %: proactive compaction, the pre-compaction flush, recovery ---------------


def _filled(**kwargs: Any) -> ContextWindow:
    """A window at 610 of 1000 tokens: m0, m1 (50 each), m2..m18 (30 each)."""
    window = ContextWindow(1000, **kwargs)
    window.add(_msg("system", 50, "m0"))
    window.add(_msg("user", 50, "m1"))
    for n in range(2, 19):
        window.add(_msg("assistant" if n % 2 == 0 else "user", 30, f"m{n}"))
    assert window.tokens == 610
    assert not any(event.kind == "compacted" for event in window.events)
    return window


def test_a_user_message_that_would_pass_60_percent_compacts_first() -> None:
    flushed: list[tuple[list[Message], list[Message]]] = []
    window: ContextWindow
    window = _filled(flush=lambda dropped: flushed.append((dropped, window.messages)))
    before = window.messages
    events = window.add(_msg("user", 40, "m19"))

    # the oldest 11 of the middle go, which brings 610 down to 333 (<= 35 %)
    assert events == [
        WindowEvent(
            "compacted",
            11,
            610,
            610 - 11 * 30 + 53,
            "11 messages replaced by the compaction marker (11 earlier messages in all)",
        )
    ]
    assert events[0].tokens_after <= 350
    after = window.messages
    assert after[:2] == before[:2]
    assert after[2] == Message("system", compaction_marker(11))
    assert _names(after[3:]) == ["m13", "m14", "m15", "m16", "m17", "m18", "m19"]
    assert after[-5:-1] == before[-4:]
    assert window.tokens == 333 + 40

    # flush saw exactly the dropped messages, while they were still in the window
    [(dropped, at_flush)] = flushed
    assert dropped == before[2:13]
    assert at_flush == before


def test_compaction_never_drops_the_first_two_or_the_last_four() -> None:
    window = ContextWindow(1000)
    for n, size in enumerate([200, 200, 100, 20, 20, 20, 20]):
        window.add(_msg("assistant" if n % 2 else "user", size, f"m{n}"))
    events = window.add(_msg("user", 150, "m7"))  # 580 + 150 > 600
    assert _kinds(events) == ["compacted"]
    assert (events[0].count, events[0].tokens_after) == (1, 580 - 100 + 52)
    # not down to 35 %, but nothing else may go
    assert _names(window.messages) == ["m0", "m1", None, "m3", "m4", "m5", "m6", "m7"]


def test_a_compaction_that_would_free_nothing_is_not_done() -> None:
    window = ContextWindow(100)
    for n, size in enumerate([5, 5, 1, 12, 12, 12, 12]):
        window.add(_msg("assistant" if n % 2 else "user", size, f"m{n}"))
    flushed: list[list[Message]] = []
    window._flush = flushed.append
    # the marker (52 tokens) would cost more than the one middle message (1 token)
    assert window.add(_msg("user", 5, "m7")) == []
    assert flushed == []
    assert len(window.messages) == 8


def test_too_few_messages_are_never_compacted() -> None:
    window = ContextWindow(100)
    for n in range(5):
        window.add(_msg("assistant" if n % 2 else "user", 12, f"m{n}"))
    assert window.add(_msg("user", 10, "m5")) == []
    assert len(window.messages) == 6


def test_a_failing_flush_leaves_the_window_as_it_was() -> None:
    def refuse(dropped: list[Message]) -> None:
        raise RuntimeError("memory is busy")

    window = _filled(flush=refuse)
    before = window.messages
    with pytest.raises(RuntimeError, match="busy"):
        window.add(_msg("user", 40, "m19"))
    assert window.messages == before
    assert window.tokens == 610


def test_a_failing_recovery_keeps_the_compaction_and_retries_next_time() -> None:
    calls: list[int] = []

    def recovery() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("notes unreadable")
        return "recovered"

    window = _filled(recovery=recovery)
    with pytest.raises(RuntimeError, match="unreadable"):
        window.add(_msg("user", 40, "m19"))
    assert _kinds(window.events) == ["compacted"]
    assert window.messages[-1].name == "m18"  # the user message was not added
    assert _kinds(window.add(_msg("user", 40, "m19"))) == ["recovery"]
    assert window.messages[-2].content == "recovered"


def test_a_second_compaction_counts_every_message_removed_so_far() -> None:
    flushed: list[list[Message]] = []
    window = _filled(flush=flushed.append)
    window.add(_msg("user", 40, "m19"))
    n = 20
    while len(flushed) < 2:
        window.add(_msg("assistant" if n % 2 == 0 else "user", 30, f"m{n}"))
        n += 1
    second = flushed[1]
    assert second[0] == Message("system", compaction_marker(11))
    assert window.messages[2] == Message("system", compaction_marker(11 + len(second) - 1))
    assert sum(compacted_count(m) is not None for m in window.messages) == 1


def test_recovery_comes_right_after_a_compaction_and_only_once() -> None:
    calls: list[int] = []

    def recovery() -> str:
        calls.append(1)
        return "RECOVERY: working buffer, session state, today's notes"

    window = _filled(recovery=recovery)
    events = window.add(_msg("user", 40, "m19"))
    assert _kinds(events) == ["compacted", "recovery"]
    assert events[1].detail == "recovery context (after compaction)"
    assert window.messages[-2] == Message(
        "system", "RECOVERY: working buffer, session state, today's notes"
    )
    assert window.messages[-1].name == "m19"
    window.add(_msg("assistant", 10, "m20"))
    assert window.add(_msg("user", 10, "m21")) == []
    assert calls == [1]


def test_an_explicit_compaction_also_brings_recovery_on_the_next_user_message() -> None:
    window = _filled(recovery=lambda: "where things stand")
    event = window.compact()
    assert event is not None and event.kind == "compacted"
    assert window.events[-1] == event
    assert window.add(_msg("assistant", 5, "a")) == []
    events = window.add(_msg("user", 5, "u"))
    assert _kinds(events) == ["recovery"]
    assert window.messages[-2].content == "where things stand"


def test_asking_where_we_were_brings_recovery() -> None:
    window = ContextWindow(1000, recovery=lambda: "we were refactoring the database")
    window.add(Message("system", "You are helpful."))
    window.add(Message("user", "hi"))
    window.add(Message("assistant", "hello"))
    events = window.add(Message("user", "Where were we?"))
    assert _kinds(events) == ["recovery"]
    assert events[0].detail == "recovery context (asked)"
    assert window.messages[-2:] == [
        Message("system", "we were refactoring the database"),
        Message("user", "Where were we?"),
    ]
    assert _kinds(window.add(Message("user", "на чём мы остановились?"))) == ["recovery"]
    assert window.add(Message("assistant", "where were we")) == []  # only user messages


def test_no_recovery_without_a_recovery_source_or_text() -> None:
    window = _filled()
    assert _kinds(window.add(_msg("user", 40, "m19"))) == ["compacted"]
    empty = _filled(recovery=lambda: "  ")
    assert _kinds(empty.add(_msg("user", 40, "m19"))) == ["compacted"]
    assert empty.messages[-1].name == "m19" and empty.messages[-2].name == "m18"
    assert empty.add(_msg("user", 5, "m20")) == []  # the one recovery was spent


@pytest.mark.parametrize(
    "text",
    [
        "where were we?",
        "OK, Where were we",
        "Where did we leave off?",
        "what were we doing before lunch",
        "На чём мы остановились?",
        "на чем мы остановились",
        "Где мы остановились?",
        "Qayerda to‘xtagan edik?",
        "qayerda qoldik",
        "Nima qilayotgan edik?",
    ],
)
def test_ways_of_asking_where_we_were(text: str) -> None:
    assert asks_where_we_were(text)


@pytest.mark.parametrize(
    "text", ["where are we going", "nowhere were we seen", "we were somewhere", "где мы?", ""]
)
def test_other_questions_are_not_where_we_were(text: str) -> None:
    assert not asks_where_we_were(text)


# -- properties of any conversation -------------------------------------------------

steps = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.integers(0, 120)),
    min_size=1,
    max_size=60,
)


@given(steps=steps, limit=st.integers(200, 2000), opening=st.integers(0, 60))
def test_any_conversation_keeps_its_ends_and_accounts_for_every_drop(
    steps: list[tuple[str, int]], limit: int, opening: int
) -> None:
    settings = WindowSettings()
    flushed: list[list[Message]] = []
    window = ContextWindow(limit, flush=flushed.append, recovery=lambda: "recovered context")
    window.add(_msg("system", opening, "m0"))
    window.add(_msg("user", opening, "m1"))
    for n, (role, size) in enumerate(steps, start=2):
        before = window.messages
        message = _msg(role, size, f"m{n}")
        events = window.add(message)
        after = window.messages
        names_after = _names(after)
        assert window.tokens == sum((len(m.content) + 3) // 4 for m in after)
        assert names_after[:2] == ["m0", "m1"]
        assert names_after[-1] == f"m{n}"
        kept_last = [name for name in _names(before[-settings.keep_last :]) if name]
        assert all(name in names_after for name in kept_last)
        assert sum(compacted_count(m) is not None for m in after) <= 1

        compactions = [e for e in events if e.kind == "compacted"]
        gone = [m for m in before if m.name and m.name not in names_after]
        if not compactions:
            assert gone == []
            continue
        assert role == "user"
        [event] = compactions
        dropped = flushed[-1]
        assert len(dropped) == event.count
        assert [m.name for m in dropped if m.name] == [m.name for m in gone]
        recovered = "recovery" in _kinds(events)
        compacted_len = len(after) - 1 - recovered
        only_ends_left = compacted_len == settings.keep_first + 1 + settings.keep_last
        assert event.tokens_after <= settings.compact_to * limit or only_ends_left
        recovery_size = (len("recovered context") + 3) // 4 if recovered else 0
        assert window.tokens <= settings.compact_to * limit + size + recovery_size or only_ends_left


def test_the_working_buffer_never_holds_a_secret(tmp_path: Path) -> None:
    key = "sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk"
    buffer = tmp_path / "memory" / "working-buffer.md"
    window = ContextWindow(100, buffer=DiskVolume(tmp_path))
    window.add(Message("user", "x " * 110))  # past 50 %: exchanges are buffered from here on
    window.add(Message("user", f"my key is {key}"))
    window.add(Message("assistant", f"I will use {key}"))
    data = buffer.read_text()
    assert key not in data and "[REDACTED:" in data
