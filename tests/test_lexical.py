"""The in-RAM BM25 (index.lexical): FTS5's tokens, exact scores, following the index."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.index.chunks import Chunk
from memstrata.index.hybrid import Weights
from memstrata.index.lexical import Lexical, document_terms, query_tokens
from memstrata.index.sqlite import FileState, Index
from memstrata.index.text import index_text

WORDS = [
    "running",
    "Caresses",
    "ponies",
    "relational",
    "generalization",
    "café",
    "naïve",
    "Ångström",
    "o'zbek",
    "g‘oya",
    "ma’lumot",
    "ЙОД",
    "Привет",
    "мир",
    "我喜欢喝茶",
    "東京",
    "2026",
    "v2",
    "x_y",
    "e-mail",
    "हिन्दी",
    "שָׁלוֹם",
    "Tashkent",
    "don't",
]
# Not here: "Straße" (FTS5's porter reads UTF-8 bytes, so it drops the final e
# after ß; Snowball reads letters and keeps it) and emoji (see index.lexical).
SEPARATORS = [" ", ", ", ". ", "\n", " - ", "!", "  "]


def fts5_tokens(text: str) -> list[str]:
    """What SQLite's FTS5 makes of ``text`` with the index's tokenizer, in order."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    db.execute("INSERT INTO f (rowid, body) VALUES (1, ?)", (index_text(text),))
    rows = db.execute('SELECT term FROM v ORDER BY "offset"').fetchall()
    db.close()
    return [row[0] for row in rows]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=12))
def test_document_terms_are_fts5_tokens(pieces: list[tuple[str, str]]) -> None:
    text = "".join(word + separator for word, separator in pieces)
    assert document_terms(text) == fts5_tokens(text)


def test_query_tokens_drop_function_words_and_stem() -> None:
    assert query_tokens("What did Caroline research for the ponies?") == [
        "carolin",
        "research",
        "poni",
    ]
    assert query_tokens("o'zbek tili") == ["oʻzbek", "tili"]


SEARCH = Weights()  # the k1 and b search uses


def ranked(
    lexical: Lexical, index: Index, query: str, limit: int, weights: Weights = SEARCH
) -> list[tuple[int, float]]:
    """``lexical.top`` for a query as search asks it (the default k1 and b)."""
    return lexical.top(index, query_tokens(query), limit, k1=weights.k1, b=weights.b)


def chunk(path: str, text: str, line: int = 1) -> Chunk:
    return Chunk(path=path, layer="semantic", line_start=line, line_end=line, text=text)


def index_with(tmp_path: Path, texts: list[str]) -> Index:
    index = Index(tmp_path / "index.sqlite")
    state = FileState(1, 1, "x")
    index.replace(
        "semantic/a.md", [chunk("semantic/a.md", t, n) for n, t in enumerate(texts)], state
    )
    return index


def test_scores_are_bm25(tmp_path: Path) -> None:
    texts = ["apple banana", "apple apple cherry date", "cherry", "banana banana banana banana"]
    index = index_with(tmp_path, texts)
    lexical = Lexical()
    textbook = Weights(k1=1.2, b=0.75)
    found = dict(ranked(lexical, index, "apple", 10, textbook))
    lengths = [len(t.split()) for t in texts]
    average = sum(lengths) / len(lengths)
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))

    def expected(tf: int, length: int) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / average))

    ids = sorted(index.chunks)
    assert set(found) == {ids[0], ids[1]}
    assert math.isclose(found[ids[0]], expected(1, 2), rel_tol=1e-5)
    assert math.isclose(found[ids[1]], expected(2, 4), rel_tol=1e-5)
    assert [cid for cid, _ in ranked(lexical, index, "apple", 10, textbook)] == [ids[1], ids[0]]


def test_a_rare_word_outranks_common_ones_and_unknown_words_find_nothing(tmp_path: Path) -> None:
    texts = [f"the project meeting is on day {n}" for n in range(50)] + [
        "the kestrel project meeting"
    ]
    index = index_with(tmp_path, texts)
    lexical = Lexical()
    best = ranked(lexical, index, "kestrel meeting project", 3)
    assert index.chunks[best[0][0]].text == "the kestrel project meeting"
    assert ranked(lexical, index, "zebra", 5) == []


def test_it_follows_the_index_adds_removes_and_drops(tmp_path: Path) -> None:
    index = index_with(tmp_path, ["alpha beta", "gamma"])
    lexical = Lexical()
    assert len(ranked(lexical, index, "gamma", 5)) == 1
    state = FileState(2, 2, "y")
    index.replace("semantic/b.md", [chunk("semantic/b.md", "gamma delta")], state)
    assert len(ranked(lexical, index, "gamma", 5)) == 2
    index.replace("semantic/a.md", [chunk("semantic/a.md", "alpha only")], state)
    found = ranked(lexical, index, "gamma", 5)
    assert [index.chunks[cid].path for cid, _ in found] == ["semantic/b.md"]
    assert lexical.live == 2
    index.drop()
    assert ranked(lexical, index, "gamma", 5) == []
    assert lexical.live == 0


def test_many_removals_rebuild_the_rows(tmp_path: Path) -> None:
    index = index_with(tmp_path, ["seed"])
    lexical = Lexical()
    state = FileState(3, 3, "z")
    for round_ in range(30):
        texts = [f"word{round_} filler {n}" for n in range(100)]
        index.replace(
            "semantic/c.md", [chunk("semantic/c.md", t, n) for n, t in enumerate(texts)], state
        )
        assert len(ranked(lexical, index, f"word{round_}", 500)) == 100
    assert lexical.live == 101
    assert len(lexical._ids) < 101 + 1000 + 200  # dead rows were dropped on the way


def test_english_clitics_split_and_uzbek_letters_stay_whole() -> None:
    assert query_tokens("What is Caroline's identity? I'm sure they'll know") == [
        "carolin",
        "ident",
        "sure",
        "know",
    ]
    assert document_terms("Caroline's dog") == ["carolin", "s", "dog"]
    assert document_terms("o'zbek g'oya ma'lumot o't ta'm") == [
        "oʻzbek",
        "gʻoya",
        "maʻlumot",
        "oʻt",
        "taʻm",
    ]


def test_an_index_written_before_the_clitic_fix_is_migrated_to_the_end(tmp_path: Path) -> None:
    """An index file from before 0004 (clitics, the change log) runs every later
    migration: its chunks stay and are found; the FTS5 table is gone (0006)."""
    index = index_with(tmp_path, ["Caroline's dog barks"])
    (cid,) = index.chunks
    index.close()
    db = sqlite3.connect(tmp_path / "index.sqlite")
    db.execute("DELETE FROM migrations WHERE name >= '0004'")  # and the change log after it
    for trigger in ("chunk_added", "chunk_removed", "vector_added", "vector_removed"):
        db.execute(f"DROP TRIGGER {trigger}")
    for trigger in ("file_added", "file_changed", "file_removed"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE changes")
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 "
        "(body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.commit()
    db.close()
    reopened = Index(tmp_path / "index.sqlite")
    assert [found for found, _ in ranked(Lexical(), reopened, "caroline", 5)] == [cid]
    reopened.close()
    db = sqlite3.connect(tmp_path / "index.sqlite")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    done = [row[0] for row in db.execute("SELECT name FROM migrations ORDER BY name")]
    db.close()
    assert "chunks_fts" not in tables and "changes" in tables
    assert done[-1] == "0006_drop_fts5"


def test_the_index_file_has_no_fts5_table(tmp_path: Path) -> None:
    """Search's BM25 is in RAM (``Lexical``): an index file keeps no FTS5 copy
    of the text (it was written on every insert and read by nothing)."""
    index = index_with(tmp_path, ["the kiln is in building 7"])
    index.close()
    db = sqlite3.connect(tmp_path / "index.sqlite")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    db.close()
    assert not {name for name in tables if name.startswith("chunks_fts")}
