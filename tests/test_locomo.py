"""LoCoMo harness: evidence repair, loading, recall@k scoring and the BM25 baseline."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata import InvalidInput
from memstrata.benchmarks.locomo import (
    Conversation,
    DialogTurn,
    Question,
    Retriever,
    Session,
    bm25_retriever,
    evaluate,
    limit_questions,
    load,
    main,
    parse_session_date,
    repair_evidence,
)

REAL_DATA = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"
FORBIDDEN = "MODEL-GENERATED-SUMMARY"

# --- evidence repair -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3"], ("D1:3",)),
        (["D1:3", "D2:7"], ("D1:3", "D2:7")),
        (["D8:6; D9:17"], ("D8:6", "D9:17")),
        (["D8:6;D9:17", "D10:1"], ("D8:6", "D9:17", "D10:1")),
        (["D8:6, D9:17 D10:1"], ("D8:6", "D9:17", "D10:1")),
        (["D30:05"], ("D30:5",)),
        (["D007:010"], ("D7:10",)),
        (["d8 : 6"], ("D8:6",)),
        (["d 8:6"], ("D8:6",)),
        ([" D4:2 "], ("D4:2",)),
        (["D:11:26"], ("D11:26",)),
        (["D"], ()),
        (["D1:18", "D", "D1:20"], ("D1:18", "D1:20")),
        ([""], ()),
        (["8:6", "D8", "Dx:1", "D1:2:3", "E1:2", "D1:", ":3", "D-1:2"], ()),
        (["D1:3", "D1:03", "d1:3"], ("D1:3",)),
        (["D2:1", "D1:1", "D2:1; D1:1"], ("D2:1", "D1:1")),
        ([], ()),
    ],
)
def test_repair_evidence(raw: list[str], expected: tuple[str, ...]) -> None:
    assert repair_evidence(raw) == expected


ids = st.builds(lambda s, t: f"D{s}:{t}", st.integers(0, 10_000), st.integers(0, 10_000))


@given(st.lists(ids, max_size=12))
def test_repair_round_trips_joined_ids(valid: list[str]) -> None:
    assert repair_evidence(["; ".join(valid)]) == tuple(dict.fromkeys(valid))
    assert repair_evidence(valid) == tuple(dict.fromkeys(valid))


@given(
    st.lists(
        st.tuples(
            st.integers(0, 999),
            st.integers(0, 999),
            st.integers(0, 3),
            st.sampled_from(["D", "d"]),
            st.sampled_from([":", " :", ": ", " : "]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["; ", ";", ", ", " ", "\n"]),
)
def test_repair_normalises_variants(
    parts: list[tuple[int, int, int, str, str]], separator: str
) -> None:
    written = [f"{d}{'0' * pad}{s}{colon}{'0' * pad}{t}" for s, t, pad, d, colon in parts]
    canonical = [f"D{s}:{t}" for s, t, *_ in parts]
    assert repair_evidence([separator.join(written)]) == tuple(dict.fromkeys(canonical))


@given(st.lists(st.text(max_size=30), max_size=5))
def test_repair_is_idempotent_and_canonical(raw: list[str]) -> None:
    repaired = repair_evidence(raw)
    assert repair_evidence(repaired) == repaired
    assert len(set(repaired)) == len(repaired)
    for entry in repaired:
        session, turn = entry[1:].split(":")
        assert entry[0] == "D" and str(int(session)) == session and str(int(turn)) == turn


# --- loading -------------------------------------------------------------------------


def _turn(dia_id: str, speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def _sample() -> dict[str, Any]:
    """A small conversation in LoCoMo's shape, sessions listed out of order."""
    return {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_10_date_time": "9:05 am on 1 March, 2024",
            "session_10": [_turn("D10:1", "Ana", "I adopted a grey cat named Pixel.")],
            "session_2_date_time": "12:06 am on 11 November, 2023",
            "session_2": [
                _turn("D2:1", "Ben", "My sister moved to Lisbon last week."),
                _turn(
                    "D2:2",
                    "Ana",
                    "Look at this!",
                    img_url=["https://example.invalid/x.jpg"],
                    blip_caption="a photo of a red bicycle leaning on a wall",
                    query="red bicycle",
                ),
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ana", "I started learning the violin this spring."),
                _turn("D1:2", "Ben", "Nice! I run marathons, the next one is in Berlin."),
                _turn("D1:3", "Ana", "My favourite food is spicy ramen."),
            ],
        },
        "qa": [
            {
                "question": "What instrument is Ana learning?",
                "answer": "violin",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where did Ben's sister move?",
                "answer": "Lisbon",
                "evidence": ["D2:1; D1:02"],
                "category": 1,
            },
            {"question": "How many cats?", "answer": 1, "evidence": ["D10:01"], "category": 2},
            {
                "question": "What is Ben's cat called?",
                "adversarial_answer": "Pixel",
                "evidence": ["D10:1"],
                "category": 5,
            },
            {"question": "Is Ana kind?", "answer": "yes", "evidence": [], "category": 3},
            {"question": "Broken", "answer": "x", "evidence": ["D"], "category": 3},
        ],
        "observation": {"session_1_observation": FORBIDDEN},
        "session_summary": {"session_1_summary": FORBIDDEN},
        "event_summary": {"events_session_1": FORBIDDEN},
    }


def _write(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def test_load_synthetic_conversation(tmp_path: Path) -> None:
    (conv,) = load(_write(tmp_path, [_sample()]))
    assert conv.sample_id == "conv-test"
    assert conv.speakers == ("Ana", "Ben")
    assert [s.number for s in conv.sessions] == [1, 2, 10]
    assert conv.sessions[0].date == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conv.sessions[1].date == datetime(2023, 11, 11, 0, 6, tzinfo=UTC)
    assert [t.dia_id for t in conv.turns()] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D10:1"]
    assert conv.sessions[1].turns[1] == DialogTurn(
        "D2:2", "Ana", "Look at this!", "a photo of a red bicycle leaning on a wall"
    )
    assert conv.sessions[0].turns[0].caption is None
    questions = conv.questions
    assert questions[0] == Question("What instrument is Ana learning?", "violin", 4, ("D1:1",))
    assert questions[1].evidence == ("D2:1", "D1:2")
    assert questions[2].answer == "1" and questions[2].evidence == ("D10:1",)
    assert questions[3].answer == "Pixel" and questions[3].category == 5
    assert questions[4].evidence == () and questions[5].evidence == ()


def test_load_ignores_model_generated_fields(tmp_path: Path) -> None:
    sample = _sample()
    (with_summaries,) = load(_write(tmp_path, [sample]))
    assert FORBIDDEN not in repr(with_summaries)
    for key in ("observation", "session_summary", "event_summary"):
        sample[key] = 42  # a shape load() would trip over if it read the field
    (without,) = load(_write(tmp_path, [sample]))
    assert without == with_summaries


def test_load_rejects_other_shapes(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        load(_write(tmp_path, {"not": "a list"}))  # type: ignore[arg-type]
    broken = _sample()
    del broken["conversation"]["session_1_date_time"]
    with pytest.raises(InvalidInput, match="session_1"):
        load(_write(tmp_path, [broken]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:06 am on 11 November, 2022", datetime(2022, 11, 11, 0, 6, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2020", datetime(2020, 1, 1, 12, 30, tzinfo=UTC)),
        ("10:04 AM on 19 December, 2023", datetime(2023, 12, 19, 10, 4, tzinfo=UTC)),
    ],
)
def test_parse_session_date(text: str, expected: datetime) -> None:
    assert parse_session_date(text) == expected


@pytest.mark.parametrize(
    "text", ["", "yesterday", "1:56 pm on 8 Mai, 2023", "1:56 pm on 31 February, 2023"]
)
def test_parse_session_date_rejects(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_session_date(text)


# --- scoring -------------------------------------------------------------------------


def _conversation(*questions: Question, sample_id: str = "c") -> Conversation:
    turns = tuple(DialogTurn(f"D1:{n}", "Ana", f"turn {n}") for n in range(1, 31))
    session = Session(1, datetime(2023, 1, 1, tzinfo=UTC), turns)
    return Conversation(sample_id, ("Ana", "Ben"), (session,), questions)


def _q(category: int, *evidence: str, text: str = "q") -> Question:
    return Question(text, "a", category, evidence)


def _fixed(ranking: list[str]) -> Callable[[Conversation], Retriever]:
    return lambda conversation: lambda question, k: ranking


def _perfect(conversation: Conversation) -> Retriever:
    by_text = {q.text: list(q.evidence) for q in conversation.questions}
    return lambda question, k: by_text[question]


def test_perfect_retriever_scores_one() -> None:
    conv = _conversation(
        *(_q(category, f"D1:{category}", text=str(category)) for category in range(1, 6))
    )
    report = evaluate([conv], _perfect)
    assert set(report.overall.values()) == {1.0}
    for scores in report.by_category.values():
        assert all(v == 1.0 for key, v in scores.items() if key.startswith("recall@"))


def test_perfect_retriever_with_two_evidence_turns() -> None:
    report = evaluate([_conversation(_q(1, "D1:4", "D1:2"))], _perfect)
    assert report.overall["recall@1"] == 0.5  # two turns cannot both be in the top 1
    assert report.overall["recall@5"] == 1.0


def test_empty_retriever_scores_zero() -> None:
    report = evaluate([_conversation(_q(1, "D1:1"), _q(5, "D1:2"))], _fixed([]))
    assert set(report.overall.values()) == {0.0}
    assert report.by_category["5"]["recall@20"] == 0.0


def test_one_of_two_found_at_rank_three() -> None:
    conv = _conversation(_q(2, "D1:7", "D1:9"))
    report = evaluate([conv], _fixed(["D1:1", "D1:2", "D1:7", "D1:3"]))
    assert report.overall == {
        "recall@1": 0.0,
        "recall@5": 0.5,
        "recall@10": 0.5,
        "recall@20": 0.5,
    }


def test_duplicates_are_dropped_before_ranking() -> None:
    ranking = ["D1:1"] * 10 + ["D1:5"]
    report = evaluate([_conversation(_q(4, "D1:5"))], _fixed(ranking))
    assert report.overall["recall@1"] == 0.0
    assert report.overall["recall@5"] == 1.0


def test_recall_uses_only_top_k_of_a_long_list() -> None:
    ranking = [f"D1:{n}" for n in range(1, 31)]
    report = evaluate([_conversation(_q(4, "D1:12", "D1:25"))], _fixed(ranking))
    assert report.overall == {
        "recall@1": 0.0,
        "recall@5": 0.0,
        "recall@10": 0.0,
        "recall@20": 0.5,
    }


def test_adversarial_excluded_from_overall() -> None:
    conv = _conversation(_q(1, "D1:1", text="hit"), _q(5, "D1:2", text="miss"))
    rankings = {"hit": ["D1:1"], "miss": ["D1:9"]}
    report = evaluate([conv], lambda c: lambda question, k: rankings[question])
    assert report.questions == 1
    assert report.overall["recall@1"] == 1.0
    assert report.by_category["5"] == {
        "recall@1": 0.0,
        "recall@5": 0.0,
        "recall@10": 0.0,
        "recall@20": 0.0,
        "questions": 1,
    }


def test_questions_without_evidence_are_skipped() -> None:
    conv = _conversation(_q(3), _q(5), _q(4, "D1:1"))
    calls: list[str] = []

    def make(conversation: Conversation) -> Retriever:
        def search(question: str, k: int) -> list[str]:
            calls.append(question)
            return ["D1:1"]

        return search

    report = evaluate([conv], make)
    assert report.skipped == 2 and report.questions == 1 and len(calls) == 1
    assert list(report.by_category) == ["4"]


def test_one_fresh_retriever_per_conversation_asked_for_max_k() -> None:
    first = _conversation(_q(1, "D1:1"), sample_id="one")
    second = _conversation(_q(2, "D1:2"), _q(3, "D1:3"), sample_id="two")
    built: list[str] = []
    asked: list[tuple[str, int]] = []

    def make(conversation: Conversation) -> Retriever:
        built.append(conversation.sample_id)

        def search(question: str, k: int) -> list[str]:
            asked.append((conversation.sample_id, k))
            return []

        return search

    evaluate([first, second], make, ks=(3, 1, 7))
    assert built == ["one", "two"]
    assert asked == [("one", 7), ("two", 7), ("two", 7)]


def test_report_json_shape() -> None:
    conv = _conversation(*(_q(category, "D1:1", text=str(category)) for category in range(1, 6)))
    report = evaluate([conv], _fixed(["D1:1"]))
    data = json.loads(json.dumps(report.as_json()))
    assert list(data) == [
        "overall",
        "by_category",
        "latency_ms",
        "questions",
        "skipped",
        "session_recall@5",
    ]
    recall_keys = ["recall@1", "recall@5", "recall@10", "recall@20"]
    assert list(data["overall"]) == recall_keys
    assert list(data["by_category"]) == ["1", "2", "3", "4", "5"]
    for scores in data["by_category"].values():
        assert list(scores) == [*recall_keys, "questions"] and scores["questions"] == 1
    assert list(data["latency_ms"]) == ["p50", "p95"]
    assert 0.0 <= data["latency_ms"]["p50"] <= data["latency_ms"]["p95"]
    assert data["questions"] == 4 and data["skipped"] == 0


def test_scores_are_rounded() -> None:
    conv = _conversation(_q(1, "D1:1", "D1:2", "D1:3"))
    report = evaluate([conv], _fixed(["D1:1"]))
    assert report.overall["recall@1"] == 0.3333


def test_empty_run_and_bad_cutoffs() -> None:
    report = evaluate([], _fixed([]))
    assert report.questions == 0 and report.by_category == {}
    assert report.overall["recall@10"] == 0.0 and report.latency_ms == {"p50": 0.0, "p95": 0.0}
    with pytest.raises(InvalidInput):
        evaluate([], _fixed([]), ks=(0, 5))


def test_limit_questions_keeps_first_n_of_each() -> None:
    convs = [_conversation(_q(1, "D1:1", text="a"), _q(2, "D1:2", text="b"))] * 2
    limited = limit_questions(convs, 1)
    assert [[q.text for q in c.questions] for c in limited] == [["a"], ["a"]]
    assert limited[0].sessions == convs[0].sessions


# --- BM25 baseline and command line --------------------------------------------------


def test_bm25_ranks_the_matching_turn_first(tmp_path: Path) -> None:
    (conv,) = load(_write(tmp_path, [_sample()]))
    search = bm25_retriever(conv)
    assert search("What instrument? the violin", 3)[0] == "D1:1"
    assert search("Where did the sister move, Lisbon?", 1) == ["D2:1"]
    assert search("red bicycle", 5)[0] == "D2:2"  # the caption is indexed
    assert search("Ben marathons", 1) == ["D1:2"]
    assert search("the of and", 5) == []
    assert search("unknownword", 5) == []
    assert len(search("Ana", 2)) == 2


def test_main_prints_and_writes_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path, [_sample()])
    out = tmp_path / "report.json"
    main(["--data", str(data), "--json", str(out), "--limit-questions", "2"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["questions"] == 2 and printed["skipped"] == 0


@pytest.mark.skipif(not REAL_DATA.is_file(), reason=f"LoCoMo dev data not found at {REAL_DATA}")
def test_bm25_baseline_on_real_data() -> None:
    conversations = limit_questions(load(REAL_DATA), 60)
    report = evaluate(conversations, bm25_retriever)
    assert report.questions > 150
    assert report.overall["recall@10"] > 0.4


def test_session_recall_at_5_counts_the_first_five_distinct_sessions() -> None:
    ranking = ["D1:1", "D1:2", "D2:1", "D3:4", "D2:2", "D4:1", "D5:9", "D6:1", "D7:1"]
    questions = (
        _q(1, "D5:1", text="a"),  # D5 is the fifth distinct session: found
        _q(5, "D6:3", text="b"),  # D6 the sixth: not found (category 5 counts too)
        _q(2, "D9:1", "D1:30", text="c"),  # any evidence session will do
    )
    report = evaluate([_conversation(*questions)], _fixed(ranking))
    assert report.session_recall == round(2 / 3, 4)
    assert report.as_json()["session_recall@5"] == round(2 / 3, 4)


def test_the_floor_is_chosen_on_the_other_conversations() -> None:
    from memstrata.benchmarks import locomo_cv
    from memstrata.benchmarks.locomo_cv import Asked, Observed
    from memstrata.index.relevance import Relevance

    def observed(name: str, question: float, unrelated: float) -> Observed:
        asked = tuple(
            Asked(4, (1.0, 1.0, 1.0, 1.0), 1.0, Relevance(question, 0.0)) for _ in range(10)
        )
        noise = tuple(Relevance(unrelated, 0.0) for _ in range(20))
        return Observed(name, asked, noise)

    data = [observed("a", 0.5, 0.2), observed("b", 0.5, 0.2), observed("c", 0.15, 0.1)]
    assert locomo_cv.choose(data[:2])[0] == 0.22  # the lowest floor that drops the noise
    report = locomo_cv.cross_validate(data)
    assert report["without_floor"]["false_hits"] == 1.0
    held_c = report["folds"][2]
    assert held_c["floor"]["lexical"] == 0.22
    assert held_c["recall@10"] == 0.0 and held_c["false_hits"] == 0.0  # tuned elsewhere
    assert report["folds"][0]["recall@10"] == 1.0
    assert report["cross_validated"]["recall@10"] == round(2 / 3, 4)


def test_bench_locomo_sets_the_window_weight(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memstrata.benchmarks.retrievers import memstrata_retriever
    from memstrata.cli import cli

    data = _write(tmp_path, [_sample()])
    (conv,) = load(data)
    search = memstrata_retriever(conv, embedder="static", context_vectors=0.6)
    search("violin", 3)  # the first search embeds the turns
    assert search.memory.index_status()["context_vectors"] == 0.6  # type: ignore[attr-defined]
    default = memstrata_retriever(conv, embedder="static")
    default("violin", 3)
    assert default.memory.index_status()["context_vectors"] == 0.0  # type: ignore[attr-defined]

    runner = CliRunner()
    for extra, weight in (([], 0.0), (["--context-vectors", "0.45"], 0.45)):
        out = tmp_path / f"report{weight}.json"
        args = ["bench", "locomo", "--data", str(data), "--embedder", "static", "--json", str(out)]
        result = runner.invoke(cli, [*args, *extra], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        report = json.loads(out.read_text(encoding="utf-8"))
        assert report["embedder"] == "static" and report["context_vectors"] == weight
    bad = runner.invoke(cli, ["bench", "locomo", "--data", str(data), "--context-vectors", "2"])
    assert bad.exit_code == 2 and "--context-vectors" in bad.output
