"""``Memory.build_context``: sections in order, within the budget, gated when
long-term memory does not fit, never a silent cut (issue 6)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import InvalidInput, Memory
from memstrata.cli import cli
from memstrata.model import Item

USER_MD = (
    "# USER.md\n\nName: Dilnoza Karimova. Backend engineer in Tashkent. Prefers short answers.\n"
)
PORT_FACT = "The staging database uses port 6543"


def _fill(memory: Memory, count: int, start: int = 0) -> None:
    projects = ["billing", "search", "checkout", "analytics", "mobile", "payments", "auth"]
    for n in range(start, start + count):
        project = projects[n % len(projects)]
        memory.remember(
            f"Note {n}: the {project} team reviewed ticket {1000 + n} on day {n % 28 + 1}",
            category="fact",
            sync=False,
        )


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5,000 long-term items, core/USER.md naming the user, one item about the port."""
    ws = tmp_path_factory.mktemp("ctx") / "ws"
    with Memory.open(ws, embedder="hash") as memory:
        _fill(memory, 2500)
        memory.remember(PORT_FACT, category="fact")
        _fill(memory, 2499, start=2500)
        memory.core.write("user", USER_MD)
        assert memory.status().items == 5000
    return ws


def test_the_issue_bar_with_5000_items(big: Path) -> None:
    with Memory.open(big, embedder="hash") as memory:
        built = memory.build_context(
            "Which port does the staging database use?", budget_tokens=1500
        )
    assert built.tokens <= 1500 * 1.05
    assert built.tokens >= 1500 * 0.80  # the budget is used, not wasted
    names = [section.name for section in built.sections]
    assert names[0] == "Core" and "Dilnoza Karimova" in built.sections[0].text
    assert PORT_FACT in built.text
    [long_term] = [s for s in built.sections if s.name == "Long-term memory"]
    assert long_term.left_out > 4000
    assert f"{long_term.left_out} more fact(s) in MEMORY.md not shown" in long_term.text


def test_the_cli_prints_the_context_and_its_sections(big: Path) -> None:
    runner = CliRunner()
    args = [
        "context",
        "--budget",
        "1500",
        "-w",
        str(big),
        "Which port does the staging database use?",
    ]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert PORT_FACT in result.output and "Dilnoza" in result.output
    data = json.loads(runner.invoke(cli, [*args, "--json"]).output)
    assert data["tokens"] <= 1575 and data["sections"][0]["sources"][0] == "core/AGENT.md"


def test_sections_come_in_order_each_labelled_and_whole_memory_when_it_fits(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        memory.core.write("user", USER_MD)
        memory.working.add("priorities", "ship the context builder")
        memory.observe("Remember that the demo is on Friday", session="s1")
        memory.remember("I prefer tabs over spaces")
        memory.record_tool_failure("deploy", {"env": "prod"}, "permission denied")
        memory.record_turn("s1", user="How is the build?", assistant="Green since noon.")
        built = memory.build_context("what's next?", session="s1", budget_tokens=2000)
    assert [s.name for s in built.sections] == [
        "Core",
        "Working memory",
        "Session state",
        "Long-term memory",
        "Lessons",
        "Recent conversation",
    ]
    by_name = {s.name: s for s in built.sections}
    assert by_name["Working memory"].sources == ("working/WORKING_MEMORY.md",)
    assert "ship the context builder" in by_name["Working memory"].text
    assert "demo is on Friday" in by_name["Session state"].text
    assert by_name["Long-term memory"].left_out == 0  # whole: it fits
    assert "I prefer tabs over spaces" in by_name["Long-term memory"].text
    assert "deploy" in by_name["Lessons"].text
    assert "user: How is the build?" in by_name["Recent conversation"].text
    assert "<!--" not in built.text  # template guidance is not sent to the model
    assert abs(built.tokens - sum(s.tokens for s in built.sections)) <= len(built.sections)


def test_a_tiny_budget_keeps_the_core_and_says_when_it_cuts(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        memory.core.write("user", USER_MD + "x " * 2000)
        built = memory.build_context("hello", budget_tokens=200)
    assert built.sections[0].name == "Core"
    assert "[core files cut to fit the budget]" in built.text
    assert built.tokens <= 200 * 1.05


def test_reads_come_from_ram_until_a_file_changes(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        memory.core.write("user", "Name: Aziz\n")
        first = memory.build_context("hi", budget_tokens=500)
        assert "Name: Aziz" in first.text
        user_md = ws / "core" / "USER.md"
        user_md.write_text("Name: Bobur\n")  # a hand edit: seen at the next call
        assert "Name: Bobur" in memory.build_context("hi", budget_tokens=500).text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget_tokens": 0}, "budget_tokens must be >= 1"),
        ({"budget_tokens": "10"}, "whole number"),
    ],
)
def test_bad_arguments(memory: Memory, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        memory.build_context("x", **kwargs)  # type: ignore[arg-type]


# -- /compact: session summaries ------------------------------------------------------


def _conversation(memory: Memory, session: str = "s1") -> None:
    memory.record_turn(session, user="Hi, I'm Sardor and I run the billing team.", assistant="Hi!")
    memory.record_turn(session, user="Let's go with Postgres 16 for the ledger.", assistant="OK.")
    memory.record_turn(session, user="The launch is on 2026-12-01.", assistant="Noted.")
    memory.record_turn(session, user="Should we shard the ledger table?", assistant="")


def test_the_extractive_summary_lists_decisions_facts_and_open_questions(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        _conversation(memory)
        raw = (ws / "sessions" / "s1.jsonl").read_bytes()
        done = memory.compact_session("s1")
        assert done.summarizer == "extractive" and done.turns == (1, 4)
        assert "## Decisions\n- Let's go with Postgres 16 for the ledger. (turn 2)" in done.summary
        assert "- The launch is on 2026-12-01. (turn 3)" in done.summary
        assert "## Open questions\n- Should we shard the ledger table? (turn 4)" in done.summary
        summary_file = (ws / done.path).read_text()
        assert summary_file.startswith("# Summaries of session s1")
        assert "## Session Compaction" in summary_file and "(turns 1-4, extractive)" in summary_file
        compaction = [i for i in memory.list() if i.id in done.items]
        assert len(compaction) == len(done.items) >= 3
        # real categories, not "Session Compaction <time>" (issue 17); no open question
        assert {i.category for i in compaction} == {"decision", "fact"}
        assert not any("?" in i.text or "(turn" in i.text for i in compaction)
        assert all(i.source.value == "agent" and i.session == "s1" for i in compaction)
        # the next run starts fresh: no turn from before the summary in the context
        fresh = memory.build_context("hello", session="s1", budget_tokens=3000)
        assert "Recent conversation" not in [s.name for s in fresh.sections]
        memory.record_turn("s1", user="New day, new plan.", assistant="Sure.")
        later = memory.build_context("hello", session="s1", budget_tokens=3000)
        recent = [s for s in later.sections if s.name == "Recent conversation"][0]
        assert "New day" in recent.text and "Postgres" not in recent.text
        memory.compact_session("s1")
        with pytest.raises(InvalidInput, match="no turn since its last summary"):
            memory.compact_session("s1")
    lines = (ws / "sessions" / "s1.jsonl").read_bytes().splitlines(keepends=True)
    assert b"".join(lines[1:]).startswith(raw)  # the raw log is untouched
    assert b'"next_run_no_continue":true' in lines[0]
    md = (ws / "MEMORY.md").read_text()
    assert "## Session Compaction" not in md and "- Let's go with Postgres 16 for the ledger." in md


class _ScriptedOpenAI:
    """A fake of the openai client: records the request, returns a set reply."""

    def __init__(self, reply: str) -> None:
        self.requests: list[dict[str, object]] = []
        outer = self

        class _Completions:
            def create(self, **kwargs: object) -> object:
                outer.requests.append(kwargs)
                message = type("M", (), {"content": reply})()
                choice = type("C", (), {"message": message})()
                return type("R", (), {"choices": [choice]})()

        self.chat = type("Chat", (), {"completions": _Completions()})()


def test_a_model_summarizer_gets_the_transcript_and_its_summary_is_kept(ws: Path) -> None:
    from memstrata.context.summarize import ChatSummarizer

    client = _ScriptedOpenAI("## Decisions\n- Postgres 16 for the ledger (turn 2)\n")
    with Memory.open(ws, embedder="none") as memory:
        _conversation(memory)
        done = memory.compact_session(
            "s1", summarizer=ChatSummarizer("openai", "local-model", client=client)
        )
    [request] = client.requests
    assert request["model"] == "local-model"
    sent = request["messages"][1]["content"]  # type: ignore[index]
    assert "[turn 2] user: Let's go with Postgres 16 for the ledger." in sent
    assert done.summarizer == "openai:local-model"
    assert "Postgres 16 for the ledger (turn 2)" in (ws / done.path).read_text()


def test_a_failing_model_is_a_clear_error_and_nothing_is_written(ws: Path) -> None:
    from memstrata import BackendUnavailable
    from memstrata.context.summarize import ChatSummarizer

    class Broken:
        class chat:  # noqa: N801 - the SDK's shape
            class completions:  # noqa: N801
                @staticmethod
                def create(**_: object) -> object:
                    raise ConnectionError("connection refused")

    with Memory.open(ws, embedder="none") as memory:
        _conversation(memory)
        with pytest.raises(BackendUnavailable, match="connection refused"):
            memory.compact_session("s1", summarizer=ChatSummarizer("openai", "m", client=Broken()))
    assert not (ws / "summaries" / "s1.md").exists()


def test_a_session_past_the_token_threshold_is_summarized_automatically(ws: Path) -> None:
    with Memory.open(ws, embedder="none", session_summary_tokens=200) as memory:
        memory.record_turn("auto", user="Let's go with Redis for the cache layer.", assistant="OK")
        assert not (ws / "summaries" / "auto.md").exists()
        for n in range(6):
            memory.record_turn("auto", user=f"status update number {n} " * 3, assistant="fine")
        assert (ws / "summaries" / "auto.md").exists()
        assert "Redis" in (ws / "summaries" / "auto.md").read_text()
        assert len(memory.sessions.turns("auto")) == 7  # the raw log keeps every turn


# -- the live window wired to memory ------------------------------------------------------


def test_the_window_captures_before_compacting_and_recovers_after(ws: Path) -> None:
    from memstrata.context import Message

    with Memory.open(ws, embedder="none") as memory:
        window = memory.window("live", limit_tokens=400)
        window.add(Message("system", "You are helpful."))
        window.add(Message("user", "Hello there, let's start."))
        window.add(Message("assistant", "Hi! Ready."))
        window.add(Message("user", "Remember that the deploy key rotates every 30 days."))
        window.add(Message("assistant", "Noted: every 30 days."))
        filler = "We talked about the release checklist and the flaky tests again. " * 3
        kinds: list[str] = []
        for n in range(12):
            kinds += [e.kind for e in window.add(Message("user", f"{n}: {filler}"))]
            kinds += [e.kind for e in window.add(Message("assistant", "ok " * 20))]
        assert "compacted" in kinds and "buffered" in kinds and "recovery" in kinds
        # the fact said before the compaction was captured when it left the window
        facts = [item.text for item in memory.list()]
        assert "Remember that the deploy key rotates every 30 days." in facts
        assert (
            (ws / "memory" / "working-buffer.md")
            .read_text()
            .startswith("# Working Buffer (Danger Zone Log)")
        )
        recovery = [m for m in window.messages if m.role == "system" and "compacted" in m.content]
        assert recovery and "Working buffer (memory/working-buffer.md)" in recovery[-1].content
        assert "Session state" in recovery[-1].content
        assert window.tokens <= 400


def test_the_fact_ranker_follows_every_write_without_a_rebuild(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        first = memory.remember("The office router lives in cupboard B")
        gate = memory._prompts._fact_ranker()  # noqa: SLF001 - the gate's own state
        assert gate.top("where is the router", 5) == [first.id]
        second = memory.supersede(first.id, "The office router moved to cupboard C")
        memory.remember("Printers are on floor 2")
        assert memory._prompts._fact_ranker() is gate  # noqa: SLF001 - caught up, not rebuilt
        assert gate.top("router cupboard", 5) == [second.id]
        memory.forget(second.id)
        assert memory._prompts._fact_ranker().top("router", 5) == []  # noqa: SLF001
        assert gate.top("printers", 5) and gate.top("nothing matches this", 5) == []


def test_the_gate_finds_a_rare_word_among_many_facts_that_share_the_common_ones() -> None:
    from datetime import UTC, datetime

    from memstrata.context.ranking import IMPACT_CAP, FactRanker
    from memstrata.model import Item

    at = datetime(2026, 1, 1, tzinfo=UTC)
    items = {}
    for n in range(IMPACT_CAP * 3):
        text = f"the team reviewed the billing report number {n}"
        if n == 1000:
            text = "the team reviewed the billing report about the flamingo budget"
        item = Item(id=f"m{n:08d}", text=text, category="fact", created_at=at, updated_at=at)
        items[item.id] = item
    gate = FactRanker()
    gate.sync(items, generation=1, changes=[])
    assert gate.top("team billing flamingo", 3)[0] == "m00001000"
    assert len(gate.top("team billing report", 10)) == 10  # common words still answer


def test_the_fact_ranker_is_rebuilt_when_most_of_it_is_dead(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        keep = memory.remember("The kiln is in building 7")
        built = memory._prompts._fact_ranker()  # noqa: SLF001 - built before the churn
        for n in range(1200):
            note = memory.remember(f"temporary note {n}", sync=False)
            memory._prompts._fact_ranker()  # noqa: SLF001 - the gate takes the note in
            memory.forget(note.id)
        gate = memory._prompts._fact_ranker()  # noqa: SLF001 - the gate's own state
        assert gate is built and gate.top("kiln building", 3) == [keep.id]
        assert len(gate._ids) < 1100  # noqa: SLF001 - dead docs were dropped


def _facts(texts: list[str]) -> dict[str, Item]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    items = {}
    for n, text in enumerate(texts):
        item = Item(id=f"m{n:08d}", text=text, category="fact", created_at=at, updated_at=at)
        items[item.id] = item
    return items


def test_the_fact_ranker_normalises_words_as_search_does() -> None:
    """One BM25: "relocation" finds "relocating" in the gate as in search (Porter
    stems both to "reloc"; the gate's own word endings made "relocat")."""
    from memstrata.context.ranking import FactRanker

    gate = FactRanker()
    gate.sync(_facts(["The team is relocating to Riga", "Lunch is at noon"]), 1, [])
    assert gate.top("any relocation news?", 5) == ["m00000000"]
    assert gate.top("generalization", 5) == []


GATE_WORDS = ["relocating", "relocation", "ports", "port", "used", "uses", "ponies", "pony"]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.lists(st.sampled_from(GATE_WORDS), min_size=1, max_size=4), min_size=1, max_size=6),
    st.lists(st.sampled_from(GATE_WORDS), min_size=1, max_size=3),
)
def test_the_fact_ranker_returns_exactly_the_facts_that_share_a_search_term(
    facts: list[list[str]], prompt: list[str]
) -> None:
    from memstrata.context.ranking import FactRanker
    from memstrata.index.lexical import document_terms, query_tokens

    items = _facts([" ".join(words) for words in facts])
    gate = FactRanker()
    gate.sync(items, 1, [])
    wanted = set(query_tokens(" ".join(prompt)))
    sharing = {
        item.id
        for item in items.values()
        if wanted & set(document_terms(f"{item.category} {item.text}"))
    }
    assert set(gate.top(" ".join(prompt), len(items))) == sharing


@pytest.mark.parametrize(
    ("layer", "policy", "section"),
    [
        ("core", "never", "## Core"),
        ("working", "on_demand", "## Working memory"),
        ("session_state", "never", "## Session state"),
        ("long_term", "never", "## Long-term memory"),
        ("lessons", "on_demand", "## Lessons"),
    ],
)
def test_build_context_follows_the_policy_table(
    ws: Path, monkeypatch: pytest.MonkeyPatch, layer: str, policy: str, section: str
) -> None:
    from types import MappingProxyType

    from memstrata.storage import layers

    with Memory.open(ws, embedder="none") as memory:
        memory.core.write("user", USER_MD)
        memory.working.add("priorities", "ship the context builder")
        memory.observe("Remember that the demo is on Friday", session="s1")
        memory.remember("I prefer tabs over spaces")
        memory.record_tool_failure("deploy", {"env": "prod"}, "permission denied")
        memory.record_turn("s1", user="How is the build?", assistant="Green since noon.")
        built = memory.build_context("what's next?", session="s1", budget_tokens=2000)
        assert section in built.text
        table = dict(layers.POLICY)
        table[layer] = layers.Policy(policy)
        monkeypatch.setattr(layers, "POLICY", MappingProxyType(table))
        changed = memory.build_context("what's next?", session="s1", budget_tokens=2000)
    assert section not in changed.text
    others = [s.name for s in built.sections if not section.endswith(s.name)]
    assert [s.name for s in changed.sections] == others  # only that section went
