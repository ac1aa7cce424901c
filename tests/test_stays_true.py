"""Issue 17, "Memory that stays true": corrections that stick, no noise stored
as facts, a context that never passes its budget, empty input refused."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import InMemoryFactStore
from memstrata import BackendUnavailable, InvalidInput, Memory
from memstrata.cli import cli
from memstrata.context import ESTIMATE, Message, TokenCounter, exact_counter
from memstrata.context.build import assemble
from memstrata.model import Item, dedupe_key
from memstrata.storage.journal import Record
from memstrata.stores.longterm import OP_DELETE, OP_PUT, LongTermStore
from memstrata.stores.protocol import FactStore, retired_keys

# -- 4. empty input is one clear error everywhere ---------------------------------------

EMPTY = ["", " ", "\n\t  \n", "\u2028"]


@pytest.mark.parametrize("text", EMPTY)
def test_observe_of_empty_text_is_refused_like_remember(memory: Memory, text: str) -> None:
    with pytest.raises(InvalidInput, match="text is empty"):
        memory.remember(text)
    with pytest.raises(InvalidInput, match="text is empty"):
        memory.observe(text)
    with pytest.raises(InvalidInput, match="text is empty"):
        memory.observe(text, source="tool")  # whatever the source
    assert memory.session_state() == [] and memory.list() == []


@pytest.mark.parametrize("text", ["", "   "])
@pytest.mark.parametrize("command", ["observe", "remember"])
def test_the_cli_refuses_empty_text_in_one_line(ws: Path, command: str, text: str) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "-w", str(ws)]).exit_code == 0
    result = runner.invoke(cli, [command, "-w", str(ws), text])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == "Error: text is empty"
    with Memory.open(ws) as memory:
        assert memory.list() == []


# -- 1. a corrected fact stays corrected ------------------------------------------------

OLD = "Remember that the staging database is pg-staging-2."
FIX = "Actually, the staging database is pg-staging-3, not pg-staging-2."


def _live_part(ws: Path) -> str:
    return (ws / "MEMORY.md").read_text(encoding="utf-8").split("## Superseded")[0]


@pytest.fixture
def looped(agent_loop: tuple[Path, str]) -> Path:
    """The workspace ``examples/agent_loop.py --workspace`` leaves behind (run
    once for the session: conftest's ``agent_loop``)."""
    ws, out = agent_loop
    assert "window  compacted" in out  # the re-capture before a compaction ran
    return ws


def test_the_agent_loop_leaves_one_live_staging_fact_the_corrected_one(looped: Path) -> None:
    with Memory.open(looped) as memory:
        staging = [item for item in memory.list() if "staging database" in item.text]
        assert [item.text for item in staging] == [FIX]
        asked = "Which database does staging use?"
        built = memory.build_context(asked, budget_tokens=800)
        with_session = memory.build_context(asked, session="example", budget_tokens=4000)
    live = _live_part(looped)
    assert "pg-staging-2" not in live.replace(FIX, "")
    lines = [line for line in built.text.splitlines() if "pg-staging-2" in line]
    assert lines and all("pg-staging-3" in line for line in lines)
    # the session state still logs what was said, struck through once corrected
    [state] = [s for s in with_session.sections if s.name == "Session state"]
    said = [line for line in state.text.splitlines() if "pg-staging-2" in line]
    assert said and all("pg-staging-3" in line or "~~" in line for line in said), said


def _talk(memory: Memory, said: list[str]) -> None:
    """``said`` through a small window of session ``s``, then small talk
    until every message of ``said`` but the first left it in a compaction."""
    window = memory.window("s", limit_tokens=60)
    for n, text in enumerate([*said, *(f"and the next thing, number {n}" for n in range(40))]):
        window.add(Message("user", text))
        window.add(Message("assistant", "Noted."))
        if n >= len(said) and not {m.content for m in window.messages} & set(said[1:]):
            return
    raise AssertionError("the window never let the messages go")


def test_recapture_before_a_compaction_resurrects_no_superseded_or_forgotten_fact(
    memory: Memory,
) -> None:
    memory.observe(OLD, session="s")
    memory.observe(FIX, session="s")
    [gone] = memory.observe("I prefer tabs over spaces.", session="s")
    assert gone.item_id is not None
    memory.forget(gone.item_id)
    _talk(memory, ["hello", OLD, "I prefer tabs over spaces.", FIX])
    assert [item.text for item in memory.list()] == [FIX]
    # and the session state was not given the same lines a second time
    texts = [entry.text for entry in memory.session_state("s")]
    assert len(texts) == len(set(texts))


def test_recapture_still_keeps_a_fact_never_observed(memory: Memory) -> None:
    _talk(memory, ["hello", "My name is Sarvar."])
    assert [item.text for item in memory.list()] == ["My name is Sarvar."]


def test_a_compaction_summary_restates_no_superseded_fact_as_live(memory: Memory) -> None:
    for said in [OLD, FIX, "Let's go with PostgreSQL 16 for the ledger.", "Where were we?"]:
        memory.observe(said, session="s")
        memory.record_turn("s", user=said, assistant="Noted.")
    summary = memory.compact_session("s")
    live = [line for line in summary.summary.splitlines() if "pg-staging-2" in line]
    assert all("pg-staging-3" in line or "~~" in line for line in live), live
    items = memory.list()
    assert [item.text for item in items if "staging" in item.text] == [FIX]
    assert {item.category for item in items} <= {"remember", "correction", "decision", "fact"}
    assert not any("Where were we" in item.text for item in items)


def test_recovery_reads_the_session_state_as_text_after_build_context_read_it(
    memory: Memory,
) -> None:
    # one file, read as entries by build_context and as text by recovery: two cache slots
    memory.observe("Remember that the demo is on Friday", session="s")
    memory.build_context("demo", session="s", budget_tokens=500)
    assert "demo is on Friday" in memory.recovery_context("s")


# -- 3. build_context is a hard ceiling ---------------------------------------------------

WORDS = st.sampled_from(
    ["staging", "database", "port", "ledger", "billing", "Sardor", "deploy", "日本", "ключ", "x"]
)
LINE = st.lists(WORDS, min_size=1, max_size=30).map(" ".join)


def _unique(lines: list[str], tag: str) -> list[str]:
    return [f"{tag}{n}: {line}" for n, line in enumerate(lines)]


def _entries(section: str, text: str, lines: list[str]) -> int:
    """How many of ``lines`` the section's text shows."""
    return sum(1 for line in lines if line in text)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    budget=st.integers(1, 10_000),
    core=st.lists(st.text(max_size=3000), min_size=0, max_size=3),
    working=st.lists(LINE, max_size=20),
    state=st.lists(LINE, max_size=40),
    facts=st.lists(LINE, max_size=300),
    lessons=st.lists(LINE, max_size=5),
    recent=st.lists(LINE, max_size=40),
    exact=st.booleans(),
)
def test_assemble_never_passes_the_budget_and_counts_what_it_leaves_out(
    budget: int,
    core: list[str],
    working: list[str],
    state: list[str],
    facts: list[str],
    lessons: list[str],
    recent: list[str],
    exact: bool,
) -> None:
    counter = _exact_or_estimate(exact)
    state, recent = _unique(state, "s"), _unique(recent, "r")
    lessons, fact_lines = _unique(lessons, "l"), _unique(facts, "f")
    pairs = [("Facts", f"- {line}") for line in fact_lines]
    built = assemble(
        budget,
        counter,
        core=[(f"core/{n}.md", text) for n, text in enumerate(core)],
        working=("working/WORKING_MEMORY.md", "\n".join(f"- {w}" for w in working))
        if working
        else None,
        state=("sessions/s/SESSION-STATE.md", state) if state else None,
        facts=len(pairs),
        whole=lambda: pairs,
        gated=lambda limit: iter(pairs[:limit]),
        lessons=lessons,
        recent=("sessions/s.jsonl", recent) if recent else None,
    )
    assert built.tokens == counter.count(built.text) <= budget
    left_out = dict(built.left_out)
    by_name = {section.name: section for section in built.sections}
    for name, lines in [
        ("Session state", state),
        ("Long-term memory", fact_lines),
        ("Lessons", lessons),
        ("Recent conversation", recent),
    ]:
        section = by_name.get(name)
        shown = _entries(name, section.text, lines) if section else 0
        assert shown + left_out.get(name, 0) == len(lines), name
        if section is not None:
            assert section.left_out == left_out.get(name, 0)
    accounting = [line for line in built.text.splitlines() if line.startswith("[left out")]
    for name, count in built.left_out:
        if accounting and not (name == "Long-term memory" and name in by_name):
            assert f"{name} {count} of " in accounting[0]


def _exact_or_estimate(exact: bool) -> TokenCounter:
    if exact:
        try:
            return exact_counter("o200k_base")
        except BackendUnavailable:
            pass
    return ESTIMATE


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    budget=st.integers(1, 10_000),
    facts=st.lists(LINE, max_size=60),
    said=st.lists(LINE, max_size=12),
    user_md=st.text(max_size=2000),
    session=st.booleans(),
)
def test_build_context_never_passes_the_budget_on_any_workspace(
    tmp_path_factory: pytest.TempPathFactory,
    budget: int,
    facts: list[str],
    said: list[str],
    user_md: str,
    session: bool,
) -> None:
    ws = tmp_path_factory.mktemp("budget") / "ws"
    with Memory.open(ws, embedder="none") as memory:
        if user_md.strip():
            memory.core.write("user", user_md)
        for fact in facts:
            memory.remember(fact, sync=False)
        for n, text in enumerate(said):
            memory.observe(f"Remember that item {n} is {text}", session="s")
            memory.record_turn("s", user=text, assistant=f"Noted {n}.")
        entries = len(memory.session_state("s"))
        built = memory.build_context(
            "staging database", session="s" if session else None, budget_tokens=budget
        )
    assert built.tokens == ESTIMATE.count(built.text) <= budget
    if session and entries and "Session state" not in {s.name for s in built.sections}:
        assert dict(built.left_out)["Session state"] == entries


def test_a_session_state_that_does_not_fit_is_counted_and_named(memory: Memory) -> None:
    for n in range(8):
        memory.observe(f"Remember that item {n} is ready for the big launch next week", session="s")
        memory.record_turn("s", user=f"question {n} " * 5, assistant="answer " * 10)
    for n in range(30):
        memory.remember(f"Fact number {n} about the staging cluster and other things")
    for budget in (1, 50, 200, 300):
        built = memory.build_context("staging", session="s", budget_tokens=budget)
        assert built.tokens <= budget, budget
    built = memory.build_context("staging", session="s", budget_tokens=300)
    assert dict(built.left_out)["Session state"] == 8
    assert "Session state 8 of 8 entries" in built.text
    assert memory.build_context("staging", budget_tokens=1).text == ""


def test_one_left_out_of_several_reads_as_english() -> None:
    from memstrata.context.build import _accounting, _Draft

    def draft(shown: int, total: int) -> _Draft:
        return _Draft("Session state", (), ["- x"] * shown, total, "entry", bullets=True)

    said = "[left out to fit the budget: Session state {}]\n"
    assert _accounting([draft(3, 4)]) == said.format("1 of 4 entries")
    assert _accounting([draft(0, 1)]) == said.format("1 of 1 entry")
    assert _accounting([draft(0, 2)]) == said.format("2 of 2 entries")


# -- 2. no noise stored as facts ------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        (
            "Hi, I'm Alice and I work on the payments team.",
            ["I'm Alice and I work on the payments team."],
        ),
        ("Hello there, my name is Bob and I prefer tea.", ["my name is Bob", "I prefer tea."]),
        ("Good morning, I prefer tea", ["I prefer tea"]),
        ("Привет, меня зовут Сарвар", ["меня зовут Сарвар"]),
        ("Salom, mening ismim Sardor", ["mening ismim Sardor"]),
        ("你好，我叫李娜", ["我叫李娜"]),
    ],
)
def test_a_greeting_is_not_kept_with_the_fact(memory: Memory, said: str, kept: list[str]) -> None:
    memory.observe(said, session="s")
    assert sorted(item.text for item in memory.list()) == sorted(kept)


@pytest.mark.parametrize(
    "said",
    [
        "Remember: my staging password is hunter2-very-secret",
        "Remember that my API key is sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk, use it to deploy.",
        "Remember that the deploy token is ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ],
)
def test_a_fact_that_is_only_a_redaction_stays_in_the_session_state(
    memory: Memory, said: str
) -> None:
    captures = memory.observe(said, session="s")
    assert captures and all(c.stored and c.item_id is None for c in captures)
    assert memory.list() == []
    assert any("[REDACTED:" in entry.text for entry in memory.session_state("s"))


def test_a_fact_with_a_redaction_that_is_not_its_value_is_kept(memory: Memory) -> None:
    memory.observe(
        "Remember to rotate sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk on Friday", session="s"
    )
    [item] = memory.list()
    assert "[REDACTED:" in item.text and "Friday" in item.text


def _noise(ws: Path) -> list[str]:
    """MEMORY.md's live lines that are recovery questions, redaction-only,
    turn references or a literal compaction category."""
    live = _live_part(ws)
    return [
        line
        for line in live.splitlines()
        if "Where were we" in line
        or "[REDACTED:" in line
        or "(turn " in line
        or line.startswith("## Session Compaction")
    ]


def test_the_agent_loop_stores_no_noise(looped: Path) -> None:
    assert _noise(looped) == []
    with Memory.open(looped) as memory:
        assert not any(item.text.startswith(("Hi", "Hello")) for item in memory.list())


def test_the_demo_stores_no_noise(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--keep", str(ws)])
    assert result.exit_code == 0, result.output
    assert _noise(ws) == []
    state = (ws / "sessions" / "demo" / "SESSION-STATE.md").read_text(encoding="utf-8")
    assert "my staging password is [REDACTED:password]" in state  # kept for the session


def test_room_the_long_term_facts_leave_goes_to_the_session_state(memory: Memory) -> None:
    for n in range(8):
        memory.observe(f"Remember that item {n} is ready for the big launch next week", session="s")
    memory.remember("The staging database uses port 6543")
    built = memory.build_context("staging", session="s", budget_tokens=600)
    assert built.tokens <= 600 and built.left_out == ()
    [state] = [s for s in built.sections if s.name == "Session state"]
    assert all(f"item {n} is ready" in state.text for n in range(8))


@pytest.mark.parametrize("make", [LongTermStore, InMemoryFactStore], ids=["embedded", "fake"])
def test_retired_keys_come_through_the_fact_store_seam(make: Callable[[], FactStore]) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)

    def item(item_id: str, text: str, **changes: object) -> dict[str, object]:
        made = Item(item_id, text, created_at=at, updated_at=at, valid_from=at)
        return made.evolve(**changes).to_dict()

    store = make()
    store.apply(Record(1, OP_PUT, {"items": [item("a", "Old value."), item("b", "Live.")]}))
    store.apply(Record(2, OP_PUT, {"items": [item("a", "Old value.", valid_to=at)]}))
    store.apply(Record(3, OP_PUT, {"items": [item("c", "Gone.")]}))
    store.apply(Record(4, OP_DELETE, {"ids": ["c"], "reason": "forget", "at": at.isoformat()}))
    assert retired_keys(store) == {dedupe_key("Old value."), dedupe_key("Gone.")}
