"""Hybrid search: the derived index, tokenisation beyond English, citations,
filters, incremental updates, rebuilds, and honesty about the embedder (issue 5)."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import postgres_server
from fakes import InMemoryIndex
from memstrata import InvalidInput, Memory
from memstrata.index.chunks import chunk_file, layer_of
from memstrata.index.dates import dates_in
from memstrata.index.hybrid import Weights
from memstrata.index.text import index_text, query_terms

# The hash embedder is explicit and deterministic (no model): these tests are
# about the index and the fusion, not about the quality of the default model.
HASH = {"embedder": "hash"}


def cites(memory: Memory, query: str, **kwargs: object) -> list[str]:
    return [hit.citation for hit in memory.search(query, **kwargs)]  # type: ignore[arg-type]


# The behaviour of search through Memory, on each index backend: the SQLite
# file, the in-memory fake of the Index Protocol (tests/fakes.py), and a whole
# workspace on PostgreSQL (its files and its index: ``ws`` names its tenant).
BACKENDS = {"sqlite": None, "in-memory": lambda _engine: InMemoryIndex(), "postgres": None}


@pytest.fixture(params=list(BACKENDS))
def open_on(request: pytest.FixtureRequest) -> Callable[..., Memory]:
    def opener(ws: Path, **settings: Any) -> Memory:
        if request.param == "postgres":
            tenant = "t-" + hashlib.sha256(str(ws).encode()).hexdigest()[:16]
            return Memory.open(postgres_server.app_url(), group=tenant, **settings)
        return Memory.open(ws, open_index=BACKENDS[request.param], **settings)

    return opener


@pytest.fixture
def searchable(ws: Path, open_on: Callable[..., Memory]) -> Memory:
    memory = open_on(ws, **HASH)
    memory.remember("The staging database listens on port 5433", category="fact")
    memory.remember("I prefer dark mode in every editor", category="preference")
    memory.record_turn("tg:1", user="We moved the billing service to Go", assistant="Noted.")
    memory.semantic.add("facts", "Dilnoza leads the payments team")
    memory.notes.create("Retrieval", "BM25 is strong on short turns.\n\nVectors catch paraphrases.")
    memory.flush()
    return memory


# -- text as FTS5 sees it --------------------------------------------------------------


def test_uzbek_apostrophe_letters_stay_whole_words() -> None:
    assert index_text("o'zbek g‘oya ma’lumot") == "oʻzbek gʻoya maʻlumot"
    assert query_terms("O'zbek tili") == ["oʻzbek", "tili"]
    assert index_text("the user's 'quoted'") == "the user's 'quoted'"  # an English clitic
    assert index_text("don't, we're, I'm, o't, ta'm") == "don't, we're, I'm, oʻt, taʻm"


def test_cjk_runs_become_characters_and_bigrams() -> None:
    assert index_text("我喜欢喝茶") == " 我 喜 欢 喝 茶 我喜 喜欢 欢喝 喝茶 "
    assert query_terms("喜欢喝茶") == ["喜欢", "欢喝", "喝茶"]


def test_query_terms_drop_function_words_unless_nothing_is_left() -> None:
    assert query_terms("What is the port of the staging database?") == [
        "port",
        "staging",
        "database",
    ]
    assert query_terms("what is it") == ["what", "is", "it"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("What did Melanie paint on October 13, 2023?", [(2023, 10, 13)]),
        ("the 1st of February, 2023 and 2024-03-05", [(2023, 2, 1), (2024, 3, 5)]),
        ("anything in May 2023?", [(2023, 5, None)]),
        ("2023-02-30 is no day, and 2023 alone is too vague", []),
    ],
)
def test_dates_named_in_a_query(text: str, found: list[tuple[int, int, int | None]]) -> None:
    assert [tuple(mention) for mention in dates_in(text)] == found


# -- finding things, in several languages ---------------------------------------------


def test_every_layer_is_found_with_its_citation(searchable: Memory) -> None:
    volume = searchable.workspace.volume
    [fact] = searchable.search("staging database port", k=1)
    line = (volume.read("MEMORY.md") or b"").decode().splitlines()[fact.line_start - 1]
    assert fact.layer == "long_term" and "5433" in line and fact.citation.startswith("MEMORY.md:")
    [turn] = searchable.search("billing service", k=1, layers=["transcripts"])
    assert turn.path.startswith("sessions/") and turn.line_start == 1 and turn.session == "tg:1"
    [semantic] = searchable.search("payments team", k=1)
    assert semantic.citation == "semantic/facts.md:5"
    [note] = searchable.search("paraphrases", k=1, layers=["notebook"])
    lines = (volume.read(note.path) or b"").decode().splitlines()
    assert "paraphrases" in lines[note.line_start - 1]
    assert all(hit.layer not in {"core", "working"} for hit in searchable.search("memory", k=20))


@pytest.mark.parametrize(
    ("said", "query"),
    [
        ("Men o'zbek tilida gapiraman", "o'zbek"),
        ("Меня зовут Сардор, я живу в Ташкенте", "Ташкенте"),
        ("我喜欢喝绿茶", "绿茶"),
    ],
)
def test_text_beyond_english_is_found(
    ws: Path, open_on: Callable[..., Memory], said: str, query: str
) -> None:
    with open_on(ws, **HASH) as memory:
        memory.remember(said)
        memory.remember("Something else entirely about deployments")
        assert memory.search(query, k=1)[0].text == said


def test_filters_by_layer_session_source_and_time(ws: Path, open_on: Callable[..., Memory]) -> None:
    early = datetime(2026, 1, 5, tzinfo=UTC)
    late = datetime(2026, 3, 5, tzinfo=UTC)
    with open_on(ws, **HASH) as memory:
        memory.record_turn("a", user="deploy the parser", assistant="done", at=early)
        memory.record_turn("b", user="deploy the parser again", assistant="done", at=late)
        memory.remember("deploy the parser with care", source="agent")
        every = memory.search("deploy parser", k=10)
        assert {hit.layer for hit in every} >= {"transcripts", "long_term", "daily_notes"}
        only_b = memory.search("deploy parser", k=10, session="b")
        assert only_b and {hit.session for hit in only_b} == {"b"}
        agent = memory.search("deploy parser", k=10, source="agent")
        assert agent[0].text == "deploy the parser with care"
        assert {hit.source for hit in agent} == {"agent"}  # and the assistant's replies
        spring = memory.search("deploy parser", k=10, layers=["transcripts"], since=late)
        assert {hit.session for hit in spring} == {"b"}
        winter = memory.search("deploy parser", k=10, layers=["transcripts"], until=early)
        assert {hit.session for hit in winter} == {"a"}


def test_a_superseded_fact_is_not_found_unless_asked(
    ws: Path, open_on: Callable[..., Memory]
) -> None:
    with open_on(ws, **HASH) as memory:
        old = memory.remember("My name is Sarvar")
        memory.supersede(old.id, "My name is Sardor")
        assert [h.text for h in memory.search("name", layers=["long_term"])] == [
            "My name is Sardor"
        ]
        both = memory.search("name", layers=["long_term"], include_superseded=True)
        assert {h.text for h in both} == {"My name is Sarvar", "My name is Sardor"}


@pytest.mark.parametrize(
    ("query", "kwargs", "message"),
    [
        ("", {}, "non-empty"),
        ("x", {"k": 0}, "k must be"),
        ("x", {"layers": ["nowhere"]}, "unknown layer nowhere"),
    ],
)
def test_bad_search_input_is_refused(
    memory: Memory, query: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        memory.search(query, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="fusion"):
        Weights(fusion="max")


# -- incremental, rebuilt, and edited by hand -------------------------------------------


def test_new_writes_are_found_at_once_and_appends_only_add_chunks(
    ws: Path, open_on: Callable[..., Memory]
) -> None:
    with open_on(ws, **HASH) as memory:
        memory.record_turn("s", user="first message about kites", assistant="ok")
        assert cites(memory, "kites", layers=["transcripts"])
        before = dict(memory._search._searcher().index.chunks)  # noqa: SLF001 - the index's own state
        memory.record_turn("s", user="second message about gliders", assistant="ok")
        [hit] = memory.search("gliders", k=1, layers=["transcripts"])
        assert hit.line_start == 2
        after = memory._search._searcher().index.chunks  # noqa: SLF001
        assert all(after.get(cid) == chunk for cid, chunk in before.items())


def test_delete_the_index_then_reindex_gives_identical_results(searchable: Memory) -> None:
    if searchable.workspace.volume.local is None:
        pytest.skip("the SQLite index file of a folder (on PostgreSQL: reindex(full=True))")
    queries = ["staging port", "dark mode", "billing Go", "payments", "paraphrases"]
    before = [[h.to_dict() for h in searchable.search(q, k=5)] for q in queries]
    index = searchable.workspace.system / "index.sqlite"
    searchable.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    with Memory.open(searchable.workspace.path, **HASH) as memory:
        report = memory.reindex()
        assert report.chunks > 0 and 0 < report.vectors <= report.chunks
        after = [[h.to_dict() for h in memory.search(q, k=5)] for q in queries]
        assert memory.reindex(full=True).files_indexed > 0
        again = [[h.to_dict() for h in memory.search(q, k=5)] for q in queries]
    assert before == after == again


def test_a_hand_edit_of_memory_md_is_searchable_after_reopen(ws: Path) -> None:
    with Memory.open(ws, **HASH) as memory:
        memory.remember("The office wifi is called memstrata-guest")
        assert memory.search("wifi", k=1)
    md = ws / "MEMORY.md"
    md.write_text(md.read_text() + "\n## Places\n- The spare keys are under the blue pot\n")
    with Memory.open(ws, **HASH) as memory:
        [hit] = memory.search("spare keys", k=1)
        assert hit.text == "The spare keys are under the blue pot"
        assert md.read_text().splitlines()[hit.line_start - 1].startswith("- The spare keys")


def test_a_hand_edited_note_is_found_by_its_content_hash(ws: Path) -> None:
    with Memory.open(ws, **HASH) as memory:
        note = memory.notes.create("Trips", "Samarkand in spring.")
        assert memory.search("Samarkand", k=1)
        stamp = note.path.stat()
        note.path.write_text("# Trips\n\nBukhara in autumn.\n")
        os.utime(note.path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
        assert memory.reindex().files_indexed == 1
        assert memory.search("Bukhara", k=1)[0].path == note.path.relative_to(ws).as_posix()
        assert all("Samarkand" not in h.text for h in memory.search("Samarkand", k=5))


def test_an_index_from_a_newer_memstrata_or_a_broken_file_is_rebuilt(ws: Path) -> None:
    with Memory.open(ws, **HASH) as memory:
        memory.remember("rebuild me please")
        assert memory.search("rebuild", k=1)
    index = ws / ".memstrata" / "index.sqlite"
    with sqlite3.connect(index) as db:
        db.execute("INSERT INTO migrations (name) VALUES ('9999_from_the_future')")
    with Memory.open(ws, **HASH) as memory:
        assert memory.search("rebuild", k=1)[0].text == "rebuild me please"
    index.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    with Memory.open(ws, **HASH) as memory:
        assert memory.search("rebuild", k=1)[0].text == "rebuild me please"


# -- honesty about the embedder ----------------------------------------------------------


def test_an_unloadable_embedder_still_finds_with_bm25_and_says_so(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = str(ws / "no-such-model.onnx")
    from memstrata.embed import clear_embedder_cache

    clear_embedder_cache()
    with (
        caplog.at_level(logging.WARNING, logger="memstrata"),
        Memory.open(ws, embed_model=missing) as memory,
    ):
        memory.remember("The staging database listens on port 5433")
        [hit] = memory.search("staging port", k=1)
        assert "5433" in hit.text
        memory.search("staging", k=1)
        status = memory.index_status()
        assert status["embedder"].startswith("unavailable") and status["vectors"] == 0
        assert any("BM25 alone" in notice for notice in memory.status().notices)
    warnings = [r for r in caplog.records if "BM25 alone" in r.getMessage()]
    assert len(warnings) == 1  # once, not on every search
    clear_embedder_cache()


def test_embedder_none_is_a_choice_not_a_failure(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="memstrata"),
        Memory.open(ws, embedder="none") as memory,
    ):
        memory.remember("plain words only")
        assert memory.search("plain", k=1)
        assert memory.index_status()["embedder"].startswith("none")
    assert not [r for r in caplog.records if "BM25" in r.getMessage()]


# -- the chunker ---------------------------------------------------------------------------


def test_layers_of_paths() -> None:
    assert layer_of("MEMORY.md") == "long_term"
    assert layer_of("memory/2026-01-02.md") == "daily_notes"
    assert layer_of("memory/LTM_AUDIT.jsonl") is None
    assert layer_of("sessions/tg-1.jsonl") == "transcripts"
    assert layer_of("sessions/tg-1.audit.jsonl") is None
    assert layer_of("sessions/archive/tg-1.jsonl") == "transcripts"
    assert layer_of("notes/zettel/a.md") == "notebook"
    assert layer_of(".memstrata/index.sqlite") is None


def test_markdown_chunks_skip_comments_and_keep_lines() -> None:
    text = "# T\n<!-- a\ncomment -->\n\n## Facts\n- one ^m12345678\n- two\n\npara one\npara two\n"
    chunks = chunk_file("semantic/facts.md", text.encode())
    assert [(c.line_start, c.line_end, c.title, c.text) for c in chunks] == [
        (6, 6, "Facts", "one"),
        (7, 7, "Facts", "two"),
        (9, 10, "Facts", "para one\npara two"),
    ]


def test_doctor_and_status_tell_how_search_runs(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.doctor import Level, diagnose
    from memstrata.embed import clear_embedder_cache
    from memstrata.storage.workspace import Workspace

    with Memory.open(ws, **HASH) as memory:
        memory.remember("indexed fact")
    found = {f.check: f for f in diagnose(Workspace.locate(ws))}
    assert "no search index yet" in found["index"].message
    with Memory.open(ws, **HASH) as memory:
        memory.search("fact")
        status = memory.index_status()
        assert status["chunks"] >= 1 and status["stale_files"] == 0
    found = {f.check: f for f in diagnose(Workspace.locate(ws))}
    assert found["index"].level is Level.OK and "chunk(s)" in found["index"].message

    monkeypatch.setenv("MEMSTRATA_EMBED_MODEL", str(ws / "missing.onnx"))
    clear_embedder_cache()
    found = {f.check: f for f in diagnose(Workspace.locate(ws))}
    assert found["search"].level is Level.WARN and "BM25 alone" in found["search"].message
    clear_embedder_cache()


def test_doctor_names_unreadable_transcript_lines_before_open(ws: Path) -> None:
    from memstrata.doctor import diagnose
    from memstrata.storage.workspace import Workspace, session_stem

    with Memory.open(ws, embedder="none") as memory:
        memory.record_turn("s1", user="hello", assistant="hi")
    path = ws / "sessions" / f"{session_stem('s1')}.jsonl"
    path.write_bytes(path.read_bytes() + b"{broken\n" + b'{"role": "user", "content": "old"}\n')
    said = [f.message for f in diagnose(Workspace.locate(ws)) if f.check == "transcripts"]
    assert any("1 unreadable line(s) (2)" in m for m in said)
    assert any("1 version 1 message(s)" in m for m in said)


def test_the_vector_matrix_follows_adds_and_removals_like_a_rebuild(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    from memstrata.index.chunks import Chunk
    from memstrata.index.hybrid import Vectors
    from memstrata.index.sqlite import Index

    rng = np.random.default_rng(5)
    index = Index(tmp_path / "index.sqlite")
    live = Vectors()
    for round_number in range(6):
        path = f"notes/r{round_number}.md"
        chunks = [Chunk(path, "notebook", n, n, f"t{round_number}-{n}") for n in range(40)]
        ids = index.replace(path, chunks, None, append=True)
        vectors = rng.normal(size=(len(ids), 8)).astype(np.float32)
        index.set_vectors("m", {cid: vectors[i].tobytes() for i, cid in enumerate(ids)})
        if round_number % 2:
            index.replace(f"notes/r{round_number - 1}.md", [], None)  # drop an earlier file
        query = rng.normal(size=8).astype(np.float32)
        assert len(index.vectors) == 40 * (round_number + 1 - (round_number + 1) // 2)
        assert live.top(index, query, 15) == Vectors().top(index, query, 15)
    index.close()


def test_gate_takes_the_prompt_tail_and_keeps_to_the_budget(
    ws: Path, open_on: Callable[..., Memory]
) -> None:
    from memstrata.memory.search import prompt_tail

    noisy = "User: hello\n[10:31] Assistant: hi there\n**User:** which port does staging use?\n---"
    assert prompt_tail(noisy) == "hello hi there which port does staging use?"
    with open_on(ws, embedder="none") as memory:
        memory.remember("The staging database listens on port 5433")
        memory.remember("The production database listens on port 5432 " + "x" * 400)
        chosen = memory.gate(noisy, budget_tokens=20)
        assert [hit.text for hit in chosen] == ["The staging database listens on port 5433"]
        assert memory.gate(noisy, budget_tokens=0) == []
        with pytest.raises(InvalidInput, match="budget_tokens"):
            memory.gate(noisy, budget_tokens="20")  # type: ignore[arg-type]


def test_the_answer_type_of_a_question_raises_chunks_that_can_answer_it(
    ws: Path, open_on: Callable[..., Memory]
) -> None:
    with open_on(ws, embedder="none") as memory:
        memory.remember("Aziz went to the pottery class with friends")
        memory.remember("Aziz went to the pottery class last Saturday")
        [first] = memory.search("When did Aziz go to the pottery class?", k=1)
        assert first.text == "Aziz went to the pottery class last Saturday"
        plain = memory.search(
            "When did Aziz go to the pottery class?", k=2, weights=Weights(when=0.0)
        )
        assert plain[0].score == pytest.approx(plain[1].score, rel=0.2)


def test_reindex_builds_what_searches_keep_in_ram(ws: Path) -> None:
    with Memory.open(ws, embedder="hash") as memory:
        for n in range(30):
            memory.remember(f"fact number {n} about the kestrel", sync=False)
        memory.reindex()
        state = memory._search._searcher()
        assert state.lexical.live == 0  # a CLI reindex builds nothing it will not use
        memory.reindex(warm=True)
        assert state.lexical.live == len(state.index.chunks) > 0
        assert state.vectors._used == len(state.index.vectors) > 0
        assert memory.search("kestrel number 7")[0].text == "fact number 7 about the kestrel"
