"""memstrata.embed.static: MiniLM distilled into a token table (load_embedder("static")).

Everything runs offline: the table ships inside memstrata.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.embed import Embedder, HashEmbedder, StaticEmbedder, load_embedder
from memstrata.embed import static as embed_static
from memstrata.errors import BackendUnavailable, InvalidInput
from memstrata.memory import Memory

np: ModuleType = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")

MIXED = [
    "hi",
    "",
    "   ",
    "The cat sits on the mat",
    "Quarterly revenue grew by 8 percent",
    "I moved to Berlin last spring and started a new job as a nurse.",
    "Я переехал в Москву в прошлом году.",
    "我明天要去北京开会。",
    "emoji 🎉🎉 and ünïcödé",
    "ok " * 700,
]
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=80
) | st.sampled_from(MIXED)


@pytest.fixture(scope="module")
def static() -> Embedder:
    return load_embedder("static")


def table_file() -> Path:
    found = importlib.resources.files("memstrata.embed").joinpath(
        "data", embed_static.DEFAULT_TABLE
    )
    assert isinstance(found, Path)
    return found


def cosine(embedder: Embedder, a: str, b: str) -> float:
    rows = embedder.embed([a, b])
    return float(rows[0] @ rows[1])


# --- the protocol ----------------------------------------------------------------


def test_static_is_an_embedder_named_by_its_table(static: Embedder) -> None:
    assert isinstance(static, StaticEmbedder)
    assert isinstance(static, Embedder)
    assert static.name == embed_static.DEFAULT_TABLE_NAME
    assert static.dim == 128
    assert load_embedder("static") is static  # shared per process
    assert load_embedder(" Static ") is static


def test_shape_dtype_unit_rows_and_empty_input(static: Embedder) -> None:
    out = static.embed(MIXED)
    assert out.shape == (len(MIXED), static.dim)
    assert out.dtype == np.float32
    assert np.isfinite(out).all()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    empty = static.embed([])
    assert empty.shape == (0, static.dim) and empty.dtype == np.float32


def test_a_text_without_tokens_gets_the_empty_texts_row(static: Embedder) -> None:
    rows = static.embed(["", "   ", "\n\t"])
    np.testing.assert_array_equal(rows[0], rows[1])
    np.testing.assert_array_equal(rows[0], rows[2])
    assert float(np.linalg.norm(rows[0])) == pytest.approx(1.0, abs=1e-5)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=12), data=st.data())
def test_same_vector_alone_and_anywhere_in_any_batch(
    static: Embedder, texts: list[str], data: Any
) -> None:
    batch = static.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    alone = np.stack([static.embed([text])[0] for text in texts])
    np.testing.assert_allclose(batch, alone, atol=1e-6)
    order = data.draw(st.permutations(range(len(texts))))
    shuffled = static.embed([texts[i] for i in order])
    np.testing.assert_allclose(shuffled, batch[list(order)], atol=1e-6)


def test_same_vector_in_a_fresh_process(static: Embedder) -> None:
    code = (
        "import sys; from memstrata.embed import load_embedder\n"
        "sys.stdout.write(load_embedder('static').embed([sys.argv[1]]).tobytes().hex())"
    )
    text = "My sister adopted a puppy in Lisbon."
    out = subprocess.run(
        [sys.executable, "-c", code, text], capture_output=True, text=True, check=True
    ).stdout
    assert bytes.fromhex(out) == static.embed([text]).tobytes()


def test_long_text_is_truncated_at_max_length() -> None:
    short = StaticEmbedder(max_length=8)
    assert short.name == f"{embed_static.DEFAULT_TABLE_NAME}@8"
    words = [f"w{i}" for i in range(40)]
    ids = short._tokenizer.encode(" ".join(words), add_special_tokens=False).ids
    assert len(ids) == 8
    prefix = short._tokenizer.decode(ids)
    np.testing.assert_allclose(short.embed([" ".join(words)]), short.embed([prefix]), atol=1e-6)
    # the default keeps 512 tokens: a 700-word text differs from its first 8
    full = load_embedder("static")
    assert not np.allclose(full.embed([" ".join(words)]), full.embed([prefix]), atol=1e-3)


def test_bad_input_is_invalid_input(static: Embedder) -> None:
    with pytest.raises(InvalidInput):
        static.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        static.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        StaticEmbedder(max_length=0)
    with pytest.raises(BackendUnavailable, match="no tokenizer"):
        load_embedder("static", tokenizer="/tmp/tokenizer.json")


# --- meaning -----------------------------------------------------------------------

RELATED = [
    ("dog", "puppy", "invoice"),
    ("car", "automobile", "banana"),
    ("doctor", "physician", "guitar"),
    ("happy", "glad", "concrete"),
    ("I adopted a puppy last week", "we got a new dog", "the invoice is overdue"),
    ("my flight to Paris was delayed", "the plane left late", "I baked bread"),
]


@pytest.mark.parametrize(("word", "near", "far"), RELATED)
def test_related_texts_score_higher_than_unrelated(
    static: Embedder, word: str, near: str, far: str
) -> None:
    assert cosine(static, word, near) > cosine(static, word, far) + 0.1


def test_the_meaning_test_fails_on_a_hash_embedder() -> None:
    hashed = HashEmbedder()
    for word, near, far in RELATED[:4]:  # no word in common: bag-of-words sees nothing
        assert not cosine(hashed, word, near) > cosine(hashed, word, far) + 0.1


def test_search_finds_a_paraphrase_with_no_shared_word(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="static") as memory:
        memory.remember("My sister is a physician in Porto.")
        memory.remember("The quarterly invoice is due on Friday.")
        memory.remember("We repainted the kitchen blue.")
        hits = memory.search("which relative works as a doctor?", k=1)
        assert [hit.text for hit in hits] == ["My sister is a physician in Porto."]
        assert memory.index_status()["embedder"] == embed_static.DEFAULT_TABLE_NAME


# --- the pinned table ---------------------------------------------------------------


def test_shipped_table_matches_its_pin() -> None:
    data = table_file().read_bytes()
    assert hashlib.sha256(data).hexdigest() == embed_static.DEFAULT_TABLE_SHA256
    # a new table gets a new name, so its vectors never mix with these
    assert embed_static.DEFAULT_TABLE_NAME.endswith(":" + embed_static.DEFAULT_TABLE_SHA256[:12])
    assert len(data) <= 8 * 1024 * 1024


def test_a_damaged_table_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    shutil.copy(table_file().parent / "tokenizer.json", tmp_path / "data")
    damaged = bytearray(table_file().read_bytes())
    damaged[len(damaged) // 2] ^= 0x01  # one bit of one weight
    (tmp_path / "data" / embed_static.DEFAULT_TABLE).write_bytes(bytes(damaged))
    monkeypatch.setattr(embed_static.importlib.resources, "files", lambda _package: tmp_path)
    with pytest.raises(BackendUnavailable, match="wrong SHA-256") as caught:
        StaticEmbedder()
    assert embed_static.DEFAULT_TABLE_SHA256 in str(caught.value)
    assert hashlib.sha256(bytes(damaged)).hexdigest() in str(caught.value)
    (tmp_path / "data" / embed_static.DEFAULT_TABLE).unlink()
    with pytest.raises(BackendUnavailable, match="cannot be read"):
        StaticEmbedder()


def test_another_table_is_named_by_its_hash(tmp_path: Path, static: Embedder) -> None:
    table = embed_static.read_table(table_file().read_bytes(), "shipped")
    header = embed_static.TableHeader(
        dim=table.shape[1], rows=table.shape[0], dtype="float16", sif=0.0, teacher="test"
    )
    data = embed_static.write_table(header, table)
    path = tmp_path / "mine.bin"
    path.write_bytes(data)
    mine = load_embedder("static", model=str(path))
    assert mine.name == f"static:mine:{hashlib.sha256(data).hexdigest()[:12]}"
    assert mine.name != static.name
    # float16 of the same (dequantised) rows: nearly the same vectors
    np.testing.assert_allclose(mine.embed(MIXED), static.embed(MIXED), atol=2e-3)


def test_table_round_trip_and_malformed_tables(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    table = rng.standard_normal((5, 4)).astype(np.float32)
    for dtype, atol in (("float16", 2e-3), ("int8", 0.02)):
        header = embed_static.TableHeader(dim=4, rows=5, dtype=dtype, sif=0.0, teacher="t")
        data = embed_static.write_table(header, table)
        np.testing.assert_allclose(embed_static.read_table(data, "t"), table, atol=atol)
        for bad in (data[:-1], data + b"x", b"NOT" + data[3:], data[:40]):
            with pytest.raises(BackendUnavailable, match="malformed"):
                embed_static.read_table(bad, "t")
    path = tmp_path / "small.bin"
    path.write_bytes(data)
    with pytest.raises(BackendUnavailable, match="rows"):
        StaticEmbedder(path)  # 5 rows for a vocabulary of 30,522 tokens
    with pytest.raises(BackendUnavailable, match="cannot read"):
        StaticEmbedder(tmp_path / "missing.bin")


# --- start-up -----------------------------------------------------------------------


def test_static_imports_no_onnxruntime() -> None:
    code = (
        "import sys\n"
        "from memstrata.embed import load_embedder\n"
        "load_embedder('static').embed(['hello world'])\n"
        "print(','.join(m for m in ('numpy', 'tokenizers', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "numpy,tokenizers"


def test_static_needs_no_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime fails
    assert StaticEmbedder().embed(["still works"]).shape == (1, 128)


def test_missing_tokenizers_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(BackendUnavailable, match="tokenizers"):
        StaticEmbedder()
