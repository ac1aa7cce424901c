"""Issue 16: a static query encoder mapped into MiniLM's space (measured, not shipped).

The idea: keep MiniLM (with contextual vectors) for the stored chunks, but
embed the *query* without the transformer: the SIF-weighted sum of MiniLM's
own token rows (every WordPiece token run alone, as ``distill_static.py``
does, 384 dimensions, not projected), normalised, centred and multiplied by a
384 x 384 matrix fitted by ridge regression so that it lands near MiniLM's
embedding of the same text. The matrix is fitted on the project's own texts
only (the capture corpus in ``tests/data/capture/`` and the paragraphs of
``docs/``), never on LoCoMo; a query then costs a table lookup instead of a
~4 ms model run.

This script builds the map (``--out``, an ``.npz`` with ``table``, ``mu`` and
``W``) and prints the vector list's own recall@5/@10 on the LoCoMo dev
conversations (each turn's own MiniLM vector; MiniLM's query against the
mapped one). The whole search with it is ``bench/ctx_ideas.py --search none
qmap --qmap OUT`` (docs/search-history.md has both figures).

Run::

    .venv/bin/python bench/query_map.py --data ../shared/data/locomo/locomo_dev.json \\
        --out /tmp/qmap.npz
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

import distill_static
from memstrata.benchmarks import locomo
from memstrata.embed.onnx import MiniLMEmbedder
from memstrata.embed.static import vendored_tokenizer_bytes

ROOT = Path(__file__).resolve().parent.parent
VOCAB = 30522


def corpus() -> list[str]:
    """The project's own texts: capture messages and documentation paragraphs."""
    texts = []
    for path in sorted((ROOT / "tests" / "data" / "capture").rglob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text().splitlines() if line]
    for path in sorted((ROOT / "docs").glob("*.md")):
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            flat = " ".join(paragraph.split())
            if 20 < len(flat) < 600 and not flat.startswith(("|", "```")):
                texts.append(flat)
    return list(dict.fromkeys(texts))


class Mapped:
    """A text's vector: ``normalise((normalise(sum of table rows) - mu) @ W)``."""

    def __init__(self, table: NDArray[np.float64], mu: NDArray[np.float64], w: NDArray[np.float64]):
        self.table, self.mu, self.w = table, mu, w
        self.tokenizer = Tokenizer.from_str(vendored_tokenizer_bytes().decode("utf-8"))

    def summed(self, texts: list[str]) -> NDArray[np.float64]:
        rows = []
        for encoding in self.tokenizer.encode_batch(texts, add_special_tokens=False):
            ids = [i for i in encoding.ids if i < len(self.table)]
            v = self.table[ids].sum(axis=0) if ids else np.zeros(self.table.shape[1])
            rows.append(v / (np.linalg.norm(v) or 1.0))
        return np.asarray(rows)

    def embed(self, texts: list[str]) -> NDArray[np.float64]:
        out = (self.summed(texts) - self.mu) @ self.w
        return np.asarray(out / np.linalg.norm(out, axis=1, keepdims=True))


def fit(sif: float, ridge: float) -> Mapped:
    rows = distill_static.token_vectors(distill_static.teacher_session(), VOCAB, "mean")[:VOCAB]
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    table = distill_static.sif_weights(VOCAB, sif)[:, None] * rows
    texts = corpus()
    target = np.asarray(MiniLMEmbedder().embed(texts), dtype=np.float64)
    mapped = Mapped(table, np.zeros(384), np.eye(384))
    x = mapped.summed(texts)
    mapped.mu = x.mean(axis=0)
    centred = x - mapped.mu
    mapped.w = np.linalg.solve(centred.T @ centred + ridge * np.eye(384), centred.T @ target)
    print(f"fitted on {len(texts)} texts", flush=True)
    return mapped


def vector_recall(data: Path, mapped: Mapped) -> dict[str, float]:
    """Recall@5/@10 of the vector list alone (each turn's own MiniLM vector)."""
    minilm = MiniLMEmbedder()
    sums = {"minilm@5": 0.0, "minilm@10": 0.0, "mapped@5": 0.0, "mapped@10": 0.0}
    count = 0
    for conversation in locomo.load(data):
        ids, texts = [], []
        for session in conversation.sessions:
            for turn in session.turns:
                caption = f" [shares a photo: {turn.caption}]" if turn.caption else ""
                ids.append(turn.dia_id)
                texts.append(f"{turn.speaker}: {turn.text}{caption}")
        asked = [q for q in conversation.questions if q.evidence and q.category in (1, 2, 3, 4)]
        turns = np.asarray(minilm.embed(texts))
        queries = [q.text for q in asked]
        for name, vectors in (("minilm", minilm.embed(queries)), ("mapped", mapped.embed(queries))):
            scores = np.asarray(vectors) @ turns.T
            for row, question in enumerate(asked):
                order = [ids[j] for j in np.argsort(-scores[row])[:10]]
                wanted = set(question.evidence)
                for k in (5, 10):
                    sums[f"{name}@{k}"] += len(wanted & set(order[:k])) / len(wanted)
        count += len(asked)
    return {key: round(value / count, 4) for key, value in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sif", type=float, default=1e-5)
    parser.add_argument("--ridge", type=float, default=0.01)
    args = parser.parse_args()
    mapped = fit(args.sif, args.ridge)
    np.savez(
        args.out,
        table=mapped.table.astype(np.float32),
        mu=mapped.mu.astype(np.float32),
        W=mapped.w.astype(np.float32),
    )
    print(json.dumps(vector_recall(args.data, mapped)))


if __name__ == "__main__":
    main()
