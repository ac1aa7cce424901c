"""memstrata.embed: local embeddings (MiniLM int8 on onnxruntime) and the hash fallback.

Everything runs offline. Tests that need the ``embed`` extra skip without it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memstrata.embed import (
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    load_embedder,
)
from memstrata.embed import onnx as embed_onnx
from memstrata.errors import BackendUnavailable, InvalidInput

CAT = "The cat sits on the mat"
KITTEN = "A kitten is sitting on a rug"
REVENUE = "Quarterly revenue grew by 8 percent"

MIXED = [
    "hi",
    "",
    CAT,
    KITTEN,
    REVENUE,
    "I moved to Berlin last spring and started a new job as a nurse at the city hospital.",
    "Remind me to call my sister on Sunday about the birthday party.",
    "The deployment failed because the database migration timed out after 30 seconds.",
    "Я переехал в Москву в прошлом году.",
    "我明天要去北京开会。",
    "Men ertaga Toshkentga boraman.",
    "ok " * 40,
]


@pytest.fixture(scope="module")
def np() -> ModuleType:
    module: ModuleType = pytest.importorskip("numpy")
    return module


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    for module in ("numpy", "onnxruntime", "tokenizers"):
        pytest.importorskip(module)
    return load_embedder()


def cosine(a: Any, b: Any) -> float:
    return float(a @ b)


# --- import cost -------------------------------------------------------------


def test_importing_memstrata_embed_loads_no_heavy_module() -> None:
    code = (
        "import sys, memstrata, memstrata.embed, memstrata.embed.onnx\n"
        "print(','.join(m for m in ('numpy', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == ""


# --- MiniLM ------------------------------------------------------------------


def test_minilm_shape_dtype_and_unit_rows(minilm: Embedder, np: ModuleType) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.name == "all-MiniLM-L6-v2-onnx-dq8"
    assert minilm.dim == 384
    vectors = minilm.embed(MIXED)
    assert vectors.shape == (len(MIXED), 384)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_minilm_empty_input(minilm: Embedder, np: ModuleType) -> None:
    vectors = minilm.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_minilm_same_vector_alone_and_in_any_batch(minilm: Embedder, np: ModuleType) -> None:
    # More texts than one internal batch (64), of many lengths, so that sorting,
    # padding and splitting all happen.
    texts = [f"{MIXED[i % len(MIXED)]} {'and more ' * (i % 13)}note {i}" for i in range(150)]
    batch = minilm.embed(texts)
    alone = np.stack([minilm.embed([t])[0] for t in texts])
    assert np.allclose(batch, alone, atol=1e-5)
    reversed_batch = minilm.embed(texts[::-1])
    assert np.allclose(reversed_batch[::-1], batch, atol=1e-5)


def test_minilm_texts_run_side_by_side_give_the_same_vectors(np: ModuleType) -> None:
    """Several texts run on two threads at once (one intra-op thread each):
    every vector is the one a single thread computes, bit for bit, in order."""
    for module in ("onnxruntime", "tokenizers"):
        pytest.importorskip(module)
    texts = [f"{MIXED[i % len(MIXED)]} {'and more ' * (i % 7)}note {i}" for i in range(60)]
    two, one = MiniLMEmbedder(threads=2), MiniLMEmbedder(threads=1)
    side_by_side = two.embed(texts)
    assert two._pool is not None  # the texts did run on the pool
    assert np.array_equal(side_by_side, one.embed(texts))
    assert one._pool is None
    assert np.array_equal(side_by_side, np.stack([two.embed([t])[0] for t in texts]))


def test_minilm_duplicates_and_tuple_input(minilm: Embedder, np: ModuleType) -> None:
    vectors = minilm.embed((CAT, REVENUE, CAT))
    assert np.allclose(vectors[0], vectors[2], atol=1e-5)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-2)


def test_minilm_semantic_sanity(minilm: Embedder) -> None:
    cat, kitten, revenue = minilm.embed([CAT, KITTEN, REVENUE])
    related = cosine(cat, kitten)
    unrelated = cosine(cat, revenue)
    assert related > 0.5
    assert related - unrelated > 0.3


def test_minilm_multilingual_does_not_crash(minilm: Embedder, np: ModuleType) -> None:
    texts = [
        "Я люблю гулять в парке по вечерам.",
        "我喜欢晚上在公园散步。",
        "Men kechqurun bog'da sayr qilishni yaxshi ko'raman.",
        "Ёжик в тумане 🦔 — classic!",
    ]
    vectors = minilm.embed(texts)
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert np.all(sims[~np.eye(4, dtype=bool)] < 0.999)  # not all one [UNK] vector


def test_minilm_long_text_is_truncated_at_256_tokens(minilm: Embedder, np: ModuleType) -> None:
    # "memory" is one token; [CLS] + 254 words + [SEP] = 256 tokens.
    long_text = "memory " * 5000
    prefix = "memory " * 254
    long_vec, prefix_vec, shorter = minilm.embed([long_text, prefix, "memory " * 200])
    assert np.allclose(long_vec, prefix_vec, atol=1e-5)
    assert not np.allclose(long_vec, shorter, atol=1e-4)


def test_minilm_max_length_is_configurable(np: ModuleType) -> None:
    for module in ("onnxruntime", "tokenizers"):
        pytest.importorskip(module)
    short = MiniLMEmbedder(max_length=16, threads=1)
    assert short.name == "all-MiniLM-L6-v2-onnx-dq8@16"
    words = [f"word{i}" for i in range(100)]
    a, b = short.embed([" ".join(["note"] * 14 + words), " ".join(["note"] * 14)])
    assert np.allclose(a, b, atol=1e-5)


def test_minilm_rejects_a_bare_string(minilm: Embedder) -> None:
    with pytest.raises(InvalidInput):
        minilm.embed("one string")
    with pytest.raises(InvalidInput):
        minilm.embed([CAT, 3])  # type: ignore[list-item]


def test_load_embedder_caches_minilm(minilm: Embedder) -> None:
    assert load_embedder() is minilm
    assert load_embedder("minilm") is minilm
    assert load_embedder(" MiniLM ") is minilm


# --- failures ------------------------------------------------------------------


def test_hash_mismatch_is_backend_unavailable(
    minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "0" * 64
    monkeypatch.setattr(embed_onnx, "DEFAULT_MODEL_SHA256", wrong)
    with pytest.raises(BackendUnavailable) as caught:
        MiniLMEmbedder()
    message = str(caught.value)
    assert wrong in message
    assert "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454" in message


def test_other_model_missing_file(minilm: Embedder, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.onnx"
    with pytest.raises(BackendUnavailable, match="nowhere"):
        load_embedder(model=str(missing))
    with pytest.raises(BackendUnavailable) as caught:
        load_embedder("minilm", model=str(missing))
    assert str(missing) in str(caught.value)


def test_other_tokenizer_missing_file(minilm: Embedder, tmp_path: Path) -> None:
    missing = tmp_path / "tokenizer.json"
    model = str(embed_onnx.default_model_path())
    with pytest.raises(BackendUnavailable) as caught:
        load_embedder(model=model, tokenizer=str(missing))
    assert str(missing) in str(caught.value)


def test_other_model_not_onnx(minilm: Embedder, tmp_path: Path) -> None:
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"this is not an onnx model")
    with pytest.raises(BackendUnavailable, match="junk.onnx"):
        load_embedder(model=str(junk))


def test_other_model_file_is_used_without_pin(
    minilm: Embedder, np: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "my-model.onnx"
    copy.write_bytes(embed_onnx.default_model_path().read_bytes())
    monkeypatch.setattr(embed_onnx, "DEFAULT_MODEL_SHA256", "0" * 64)  # not consulted
    other = load_embedder(model=str(copy))
    assert other is not minilm
    assert other.name == "onnx:my-model:9e8025153763"
    assert other.dim == 384
    for text in (CAT, KITTEN):  # one at a time: a path's model is batched by 16, and this
        # file quantizes a run's activations together
        assert np.allclose(other.embed([text]), minilm.embed([text]), atol=1e-5)


def test_missing_runtime_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(BackendUnavailable, match="pip install"):
        MiniLMEmbedder()


def test_missing_model_file_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("numpy", "onnxruntime", "tokenizers"):
        pytest.importorskip(module)
    from memstrata.embed import onnx as embed_onnx

    monkeypatch.setattr(embed_onnx, "MODEL_RESOURCE", "data/no-such-model.onnx")
    with pytest.raises(BackendUnavailable, match="reinstall"):
        MiniLMEmbedder()


def test_the_default_model_is_shipped_inside_memstrata() -> None:
    from memstrata.embed import onnx as embed_onnx

    path = embed_onnx.default_model_path()
    assert path.is_file() and path.parent.name == "data" and path.parent.parent.name == "embed"
    assert embed_onnx.DEFAULT_MODEL_NAME == "all-MiniLM-L6-v2-onnx-dq8"


def test_the_shipped_model_runs_one_text_at_a_time() -> None:
    for module in ("numpy", "onnxruntime", "tokenizers"):
        pytest.importorskip(module)
    assert MiniLMEmbedder(threads=1).batch_size == 1
    with pytest.raises(InvalidInput, match="one text at a time"):
        MiniLMEmbedder(batch_size=16)


def test_bad_settings_are_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        MiniLMEmbedder(max_length=1)
    with pytest.raises(InvalidInput):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(InvalidInput):
        MiniLMEmbedder(threads=0)


def test_load_embedder_none_and_unknown() -> None:
    with pytest.raises(BackendUnavailable, match="embeddings are turned off"):
        load_embedder("none")
    with pytest.raises(InvalidInput, match="unknown embedder"):
        load_embedder("word2vec")


# --- hash fallback --------------------------------------------------------------


def test_hash_embedder_only_by_name(np: ModuleType) -> None:
    hashed = load_embedder("hash")
    assert isinstance(hashed, HashEmbedder)
    assert isinstance(hashed, Embedder)
    assert hashed.name == "hash-bow-256"
    assert hashed.dim == 256


def test_hash_embedder_is_deterministic(np: ModuleType) -> None:
    a = HashEmbedder().embed(MIXED)
    b = HashEmbedder().embed(MIXED)
    assert a.dtype == np.float32
    assert a.shape == (len(MIXED), 256)
    assert np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    # Stable across processes (no salted hash()).
    code = (
        "from memstrata.embed import HashEmbedder\n"
        "v = HashEmbedder().embed(['The cat sits on the mat'])[0]\n"
        "print(' '.join(str(i) for i in v.nonzero()[0]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [int(i) for i in out] == list(a[2].nonzero()[0])


def test_hash_embedder_behaviour(np: ModuleType) -> None:
    small = HashEmbedder(dim=64)
    assert small.embed([]).shape == (0, 64)
    cat, cats_again, revenue, empty = small.embed([CAT, "the CAT sits!", REVENUE, "..."])
    assert cosine(cat, cats_again) > cosine(cat, revenue)
    assert np.isclose(np.linalg.norm(empty), 1.0)
    with pytest.raises(InvalidInput):
        small.embed("text")
    with pytest.raises(InvalidInput):
        HashEmbedder(dim=0)
