"""The learned capture scorer (capture/scorer.py), its hook in scan, and its corpus."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import math
import re
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memstrata.capture.scan as scan_module
from capture_corpus import open_texts
from memstrata.capture import scorer
from memstrata.capture.scan import scan

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "capture"
LANGUAGES = ("en", "uz", "ru", "zh")
CATEGORIES = {"correction", "decision", "preference", "proper_noun", "remember", "specific_value"}


def bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cats(text: str, **kwargs: bool) -> set[str]:
    kwargs.setdefault("learned", True)
    return {entry.category for entry in scan(text, **kwargs)}  # type: ignore[arg-type]


def test_scan_adds_the_scorer_unless_told_not_to() -> None:
    assert scan("please use Kafka in the docs", learned=False) == []
    assert [e.category for e in scan("please use Kafka in the docs")] == ["preference"]


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("note for later: call the bank", "remember"),
        ("hey, this is Priya from the billing team", "proper_noun"),
        ("please use Terraform in all examples", "preference"),
        ("we'll try Kafka first and see", "decision"),
        ("заметка на потом: оплатить счёт", "remember"),
        ("сначала попробуем Redis", "decision"),
        ("avval Django ni sinab ko'ramiz", "decision"),
        ("你好，我是数据组的王芳", "proper_noun"),
    ],
)
def test_the_scorer_finds_paraphrases_without_the_rules(text: str, category: str) -> None:
    # the rules now cover these forms too (issue 17); the scorer must find them alone
    assert category in {found for found, _ in scorer.additions(text, set())}
    assert category in cats(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm going home",
        "Do you prefer tabs or spaces?",
        "I remember when we had no CI at all, wild times",
        "I still remember my first job at a bank",
        "если бы мы выбрали Redis, что бы сломалось?",
        "如果我们用Kafka会怎么样",
    ],
)
def test_the_scorer_adds_nothing_to_hard_negatives(text: str) -> None:
    assert cats(text) == cats(text, learned=False) == set()


def test_a_vetoed_sentence_never_gets_a_learned_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    def everything(
        text: str, hits: object, lowered: object = None
    ) -> list[tuple[str, tuple[int, int]]]:
        return [("remember", (0, len(text)))]

    monkeypatch.setattr(scan_module, "additions", everything)
    assert cats("do you remember the bank?") == set()  # a question: the pack's veto
    assert cats("what if we moved everything to Rust") == set()
    assert cats("the bank, tonight") == {"remember"}


def test_the_scorer_never_repeats_a_rule_category_and_keeps_the_rules() -> None:
    text = "Let's go with Postgres. note for later: call the bank"
    entries = scan(text, learned=True)
    assert [e.category for e in entries].count("decision") == 1
    rules = scan(text, learned=False)
    assert set(rules) <= set(entries)
    for entry in entries:
        assert text[entry.span[0] : entry.span[1]] == entry.text


def test_without_weights_the_rules_answer_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scorer, "load_model", lambda: None)
    assert scorer.additions("please use Kafka in the docs", set()) == []
    assert cats("please use Kafka in the docs") == set()


WEIGHTS = ROOT / "src" / "memstrata" / "capture" / "data" / "scorer.bin"


def numpy_model(data: bytes) -> dict[str, object]:
    """The weights file read with numpy, independently of ``scorer.parse_model``."""
    (length,) = struct.unpack_from("<I", data, len(scorer.MAGIC))
    start = len(scorer.MAGIC) + 4
    header = json.loads(data[start : start + length])
    names_end = start + length + header["names_bytes"]
    names = data[start + length : names_end].decode("utf-8").split("\n")
    weights = np.frombuffer(data, dtype="<f2", offset=names_end).reshape(len(names), -1)
    return {
        "rows": {name: row for row, name in enumerate(names)},
        "weights": weights.astype(np.float64),
        "rules": np.array(header["rules"], dtype=np.float64),
        "bias": np.array(header["bias"], dtype=np.float64),
    }


def numpy_logits(reference: dict[str, object], text: str, hits: set[str]) -> np.ndarray:
    rows, weights = reference["rows"], reference["weights"]
    assert isinstance(rows, dict) and isinstance(weights, np.ndarray)
    picked = [rows[name] for name in scorer.features(text) if name in rows]
    rules = [at for at, category in enumerate(scorer.RULE_CATEGORIES) if category in hits]
    total = reference["bias"] + weights[picked].sum(axis=0) + reference["rules"][rules].sum(axis=0)  # type: ignore[index, operator]
    return total  # type: ignore[no-any-return]


def test_the_scorer_computes_numpys_logits_on_the_whole_corpus() -> None:
    model = scorer.load_model()
    assert model is not None
    reference = numpy_model(WEIGHTS.read_bytes())
    hit_sets = [set(), {"preference"}, {"decision", "specific_value"}, {"remember", "correction"}]
    for path in sorted(CORPUS.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = json.loads(line)["text"]
            for hits in hit_sets:
                expected = numpy_logits(reference, text, hits)
                assert np.allclose(model.logits(text, hits), expected, rtol=0, atol=1e-6), text


def fsummed(model: scorer.Model) -> scorer.Model:
    """A copy of ``model`` whose logits take the reference path: every row ``fsum``'d."""
    copy = scorer.Model(
        sorted(model.index, key=model.index.__getitem__), model.flat, model.rules, model.bias
    )
    copy.cut, copy.exact = model.cut, False
    return copy


HIT_SETS = [set(), {"preference"}, {"decision", "specific_value"}, {"remember", "correction"}]


def corpus_texts() -> list[str]:
    """The corpus's texts but the held-out sets' (``capture_corpus``), and a
    few edge cases (empty, long, mixed scripts)."""
    texts = open_texts()
    edges = ["", "?", "a " * 5000, "x" * 9000, "İstanbul 12 ３ ok-ok:;", "我喜欢茶。不要咖啡"]
    return texts + edges


def test_the_packed_sums_give_the_fsum_of_every_row_bit_for_bit() -> None:
    model = scorer.load_model()
    assert model is not None
    reference = fsummed(model)
    hit_sets, texts = HIT_SETS, corpus_texts()
    for text in texts:
        for hits in hit_sets:
            assert model.logits(text, hits) == reference.logits(text, hits), text
    assert model.exact  # float16 weights never leave the packed sums


def test_weights_off_the_float16_grid_are_fsummed() -> None:
    names = ["^", "bank", "call bank", "$"]
    weights = [[0.1 * r + 1e-9 * c for c in range(5)] for r in range(len(names))]
    rules = [[0.3 + 0.01 * r] * 5 for r in range(6)]
    model = scorer.Model(names, weights, rules, [0.2, -0.5, 1.0, 0.0, -1.0])
    assert model.exact
    got = model.logits("call bank", {"remember"})
    assert not model.exact  # the first vector off the grid turned the packed sums off
    rows = [model.bias, *(model.row(model.index[name]) for name in names), tuple(rules[5])]
    assert got == tuple(math.fsum(column) for column in zip(*rows, strict=True))
    assert got == fsummed(model).logits("call bank", {"remember"})


def test_every_set_of_rule_verdicts_gives_the_fsum_of_every_row() -> None:
    """``Model.bases`` (the bias plus the rules' rows, exact) for each of the
    64 sets of verdicts, against every row ``fsum``'d."""
    model = scorer.load_model()
    assert model is not None
    reference = fsummed(model)
    texts = [
        "note for later: call the bank. I prefer tea, not coffee.",
        "we decided on Postgres; my name is Bob",
        "Мы решили: PostgreSQL. 我喜欢茶。",
        "",
    ]
    for size in range(len(scorer.RULE_CATEGORIES) + 1):
        for hits in itertools.combinations(scorer.RULE_CATEGORIES, size):
            for text in texts:
                got = model.logits(text, {*hits, "not a category"})
                assert got == reference.logits(text, set(hits)), (text, hits)
    assert all(base is not None for base in model.bases.values())  # float32 rows sum exactly


def test_a_base_float64_cannot_hold_falls_back_to_the_fsum() -> None:
    names = ["^", "bank", "$"]
    weights = [[0.5, 0.25, -0.125, 1.0, 0.0]] * len(names)
    rules = [[1.0, 2.0**-60, 0.5, 0.0, 3.0]] + [[0.25] * 5] * 5  # 1 + 2**-60 is not a float
    bias = [2.0**-60, 1.0, 0.0, -1.0, 0.5]
    model = scorer.Model(names, weights, rules, bias)
    got = model.logits("bank", {"correction"})
    assert model.bases[(True, False, False, False, False, False)] is None
    rows = [model.bias, *(model.row(model.index[name]) for name in names), tuple(rules[0])]
    assert got == tuple(math.fsum(column) for column in zip(*rows, strict=True))
    assert model.logits("bank", {"proper_noun"}) == fsummed(model).logits("bank", {"proper_noun"})


def test_loading_and_scoring_import_no_numpy() -> None:
    code = (
        "import sys\n"
        "from memstrata.capture import scorer\n"
        "from memstrata.capture.scan import scan\n"
        "assert scorer.load_model() is not None\n"
        "scan('note for later: call the bank. I prefer tea, not coffee.')\n"
        "print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dump_and_parse_round_trip_within_float16() -> None:
    names = ["^", "bank", "bank~", "ban#", "call bank"]
    weights = [[0.5 * r + 0.125 * c for c in range(5)] for r in range(len(names))]
    rules = [[0.1 * r] * 5 for r in range(6)]
    data = scorer.dump_model(names, weights, rules, [0.25, -0.5, 1.0, 0.0, -1.0], 0.4)
    model = scorer.parse_model(data)
    assert sorted(model.index, key=model.index.__getitem__) == names
    assert [list(model.row(at)) for at in range(len(names))] == weights  # exact in float16
    assert model.rules == [tuple(row) for row in rules]
    assert model.bias == (0.25, -0.5, 1.0, 0.0, -1.0)
    assert model.logits("call bank", ()) == scorer.Model(
        names, weights, rules, model.bias, 0.4
    ).logits("call bank", ())
    with pytest.raises(ValueError):
        scorer.dump_model(["two\nlines"], [[0.0] * 5], rules, [0.0] * 5)


def test_a_missing_or_damaged_weights_file_disables_the_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = WEIGHTS.read_bytes()
    damaged = {
        "missing": None,
        "empty": b"",
        "magic": b"NOTMAGIC" + good[8:],
        "truncated": good[:-1],
        "longer": good + b"\0\0",
        "header": good[:12] + b"{" * 20 + good[32:],
        "directory": "dir",
    }
    for name, data in damaged.items():
        path = tmp_path / name
        if data == "dir":
            path.mkdir()
        elif isinstance(data, bytes):
            path.write_bytes(data)
        monkeypatch.setattr(scorer, "WEIGHTS", path)
        scorer.load_model.cache_clear()
        try:
            assert scorer.load_model() is None, name
            assert scorer.additions("note for later: call the bank", set()) == []
        finally:
            scorer.load_model.cache_clear()
    monkeypatch.undo()
    assert scorer.load_model() is not None


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.binary(max_size=200), st.integers(min_value=0, max_value=2000))
def test_parse_model_refuses_any_damage_with_value_error(noise: bytes, cut: int) -> None:
    good = WEIGHTS.read_bytes()
    for data in (noise, scorer.MAGIC + noise, good[:cut] + noise):
        with contextlib.suppress(ValueError):
            scorer.parse_model(data)


def test_the_shipped_weights_are_small() -> None:
    assert WEIGHTS.stat().st_size < 500_000
    assert not WEIGHTS.with_name("scorer.npz").exists()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.text(max_size=300), st.sets(st.sampled_from(sorted(scorer.DURABLE))))
def test_additions_never_raise_nor_repeat_the_rules(text: str, hits: set[str]) -> None:
    for category, (start, end) in scorer.additions(text, hits):
        assert category in scorer.DURABLE and category not in hits
        assert 0 <= start < end <= len(text) and text[start:end].strip()
    entries = scan(text, learned=True)
    assert len({e.category for e in entries}) == len(entries)


def test_the_generated_corpus_is_reproducible() -> None:
    generator = bench("gen_capture_corpus")
    for folder in generator.SETS:
        for lang in LANGUAGES:
            assert generator.render(lang, folder) == (CORPUS / folder / f"{lang}.jsonl").read_text(
                encoding="utf-8"
            )


# the corpus folders grown after the first labelled files, and their authors
GROWN = [
    ("generated", "template"),
    ("negatives", "hand"),
    ("probe", "probe"),
    ("fresh", "fresh"),
    ("paraphrase", "paraphrase"),
    ("recheck", "recheck"),
    ("recheck2", "recheck2"),
    ("unseen", "unseen"),
    ("unseen3", "unseen3"),
    ("unseen4", "unseen4"),
    ("native", "native"),
    ("native2", "native2"),
    ("native3", "native3"),
    ("native4", "native4"),
    ("native5", "native5"),
    ("native6", "native6"),
    ("native7", "native7"),
    ("native8", "native8"),
    ("generated2", "template2"),
    ("generated3", "template3"),
]


@pytest.mark.parametrize(("folder", "author"), GROWN)
def test_the_grown_corpus_is_well_formed(folder: str, author: str) -> None:
    texts = set()
    for folder_name in ("", "blind", *(grown for grown, _ in GROWN)):
        for lang in LANGUAGES:
            path = CORPUS / folder_name / f"{lang}.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines():
                texts.add(json.loads(line)["text"]) if folder_name != folder else None
    for lang in LANGUAGES:
        lines = (CORPUS / folder / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
        messages = [json.loads(line) for line in lines]
        assert len(messages) >= 10
        ids, distinct = len({m["id"] for m in messages}), len({m["text"] for m in messages})
        assert ids == distinct == len(lines), (folder, lang, ids, distinct, len(lines))
        for message in messages:  # a failure names the message's id, never a text (held-out
            where = f"{folder}/{message['id']}"  # sets are checked here and in ``texts``)
            assert message["lang"] == lang and message["author"] == author, where
            assert set(message["labels"]) <= CATEGORIES, where
            assert message["labels"] == sorted(set(message["labels"])), where
            fresh = bool(message["why"]) and message["text"] not in texts
            assert fresh, f"{where}: no why, or another folder has its text"
            if folder == "negatives":
                assert message["labels"] == [], where


def test_training_is_deterministic() -> None:
    trainer = bench("train_capture")
    messages = [m for m in trainer.load_corpus() if m["lang"] == "en"][:120]
    first, second = trainer.train(messages, steps=30), trainer.train(messages, steps=30)
    assert first.names == second.names
    assert np.array_equal(first.weights, second.weights)
    assert np.array_equal(first.bias, second.bias)


@pytest.mark.parametrize("held_out", ["unseen", "unseen2", "unseen3", "unseen4"])
def test_the_held_out_folder_is_never_trained_on(
    monkeypatch: pytest.MonkeyPatch, held_out: str
) -> None:
    trainer = bench("train_capture")
    assert held_out in trainer.TEST_ONLY
    assert all(
        author not in trainer.TEST_ONLY and folder.name not in trainer.TEST_ONLY
        for author, folder in trainer.FOLDERS.items()
    )
    # refused by author name and by folder name alike, before any file is read
    for author, folder in ((held_out, CORPUS / "native"), ("other", CORPUS / held_out)):
        monkeypatch.setitem(trainer.FOLDERS, author, folder)
        with pytest.raises(ValueError, match="held-out"):
            trainer.load_corpus()
        monkeypatch.delitem(trainer.FOLDERS, author)


@given(st.text(alphabet="abz09 ?!:,;-_.'\n", max_size=80))
def test_the_ascii_token_pattern_splits_as_its_plain_form(text: str) -> None:
    assert scorer._ASCII.findall(text) == re.findall(r"[a-z]+|[0-9]+|[?!:,;-]", text)


def from_logits(model: scorer.Model, text: str, hits: set[str]) -> list[int]:
    """``Model.wanted`` as the logits and the cut tell it."""
    logits = model.logits(text, hits)
    return [
        at for at, cat in enumerate(scorer.DURABLE) if cat not in hits and logits[at] >= model.cut
    ]


def test_the_gates_want_what_the_logits_reach_on_the_corpus() -> None:
    """``Model.wanted`` (the packed sums tested against each verdict set's
    ``_Gates`` entry, unpacked only past it) against the logits and the cut,
    on every corpus text with four sets of verdicts, and on the sentences of
    the texts for which something is wanted."""
    model = scorer.load_model()
    assert model is not None
    hit_sets, texts = HIT_SETS, corpus_texts()
    reached = 0
    for text in texts:
        for hits in hit_sets:
            want = from_logits(model, text, hits)
            assert model.wanted(text, hits) == want, (text, hits)
            assert model.wanted(text, hits, text.lower()) == want, (text, hits)
            reached += bool(want)
    assert reached > 100  # both answers are exercised
    assert all(gate is not None for gate in model.gates.values())


def test_a_gate_flips_where_the_rounded_logit_reaches_the_cut() -> None:
    """``_least``: the least scaled sum whose one-rounding logit reaches the cut."""
    scale = float(1 << 24)
    for base in (0.0, -1.4416, 0.619, 1e-30, -3.0, 2.0**-60, 5.0):
        for cut in (0.6190392084062236, 0.0, -0.5, 1e-12):
            least = scorer._least(base, cut)
            assert base + least / scale >= cut
            assert least == -(1 << 53) or base + (least - 1) / scale < cut
    assert scorer._least(float("nan"), 0.0) == 1 << 53  # never reaches: nothing wanted


def test_a_model_without_exact_bases_has_no_gates() -> None:
    names = ["^", "bank", "$"]
    weights = [[0.5, 0.25, -0.125, 1.0, 0.0]] * len(names)
    rules = [[1.0, 2.0**-60, 0.5, 0.0, 3.0]] + [[0.25] * 5] * 5
    model = scorer.Model(names, weights, rules, [2.0**-60, 1.0, 0.0, -1.0, 0.5])
    for hits in ({"correction"}, {"proper_noun"}, set()):
        assert model.wanted("bank", hits) == from_logits(model, "bank", hits)
    assert model.gates[(True, False, False, False, False, False)] is None


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.text(alphabet=st.sampled_from("abcdeilmnoprstuwy '.,!?\n:Щя我1"), max_size=300)
    | st.text(max_size=200),
    st.sets(st.sampled_from(sorted(scorer.RULE_CATEGORIES))),
)
def test_the_gates_want_what_the_logits_reach(text: str, hits: set[str]) -> None:
    model = scorer.load_model()
    assert model is not None
    assert model.wanted(text, hits) == from_logits(model, text, hits)
    assert scorer.tokens(text, text.lower()) == scorer.tokens(text)


def test_a_tokens_upper_fields_bound_its_pairs() -> None:
    """A token's packed int: its vector's fields, then as many of its vector
    plus its best pair row (``_best_pair``); summed over a text's tokens, the
    upper fields are at least the vectors and the pair rows together."""
    model = scorer.load_model()
    assert model is not None
    width = model.width
    whole = struct.Struct(f"<{2 * width}Q")
    for text in ["note for later: call the bank", "I prefer tea, not coffee", "we'll use Go"]:
        toks = scorer.tokens(text)
        tokens_only = sum(map(model.packed.__getitem__, toks))
        pairs = [
            model.pairs[pair] for pair in zip(toks, toks[1:], strict=False) if pair in model.pairs
        ]
        fields = [
            value - scorer._HALF
            for value in whole.unpack((tokens_only + model.offset).to_bytes(16 * width, "little"))
        ]
        for column in range(width):
            exact = fields[column] + sum(int(row[column] * 2**24) for row in pairs)
            assert fields[width + column] >= exact
        for token in toks:
            best = model._best_pair(token)
            for (first, _), row in model.pairs.items():
                if first == token:
                    assert all(b >= max(0.0, r) for b, r in zip(best, row, strict=True))


def test_weights_off_the_float16_grid_want_what_their_logits_reach() -> None:
    names = ["^", "bank", "call", "call bank", "^ call", "bank $", "$"]
    for scale in (0.1, 0.9, 3.0):
        weights = [[scale * r + 1e-9 * c for c in range(5)] for r in range(len(names))]
        rules = [[0.3 + 0.01 * r] * 5 for r in range(6)]
        model = scorer.Model(names, weights, rules, [0.25, -0.5, 1.0, 0.0, -1.0])
        for text in ("call bank", "bank", "call", ""):
            for hits in (set(), {"remember"}, {"decision", "correction"}):
                assert model.wanted(text, hits) == from_logits(model, text, hits)
        assert not model.exact


def test_pair_rows_off_the_grid_keep_the_bound_exact() -> None:
    """Token vectors on the float16 grid, pair rows off it: the bound (token
    vectors plus best pair rows) may answer before a pair is packed."""
    names = ["^", "bank", "call", "call bank", "^ call", "bank $", "$"]
    for shift in (-3.0, -1.0, 0.0, 1.0):
        weights = [[shift / 8 + 0.125 * c for c in range(5)] for _ in range(3)]
        weights += [[0.3 + 1e-9 * c + shift / 10 for c in range(5)] for _ in range(3)]
        weights += [[0.0] * 5]
        rules = [[0.25] * 5 for _ in range(6)]
        model = scorer.Model(names, weights, rules, [-1.0, -0.5, 0.0, 0.5, -2.0])
        for text in ("call bank", "bank", "call", "call call bank", ""):
            for hits in (set(), {"remember"}, {"decision", "correction"}):
                assert model.wanted(text, hits) == from_logits(model, text, hits), (shift, text)
