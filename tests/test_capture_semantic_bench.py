"""bench/capture_semantic.py's sparse trainer is train_capture.train (docs/capture-history.md,
"A multilingual sentence embedding"): same names, weights to float rounding,
same scan verdicts; and a scan read at several cuts is a scan at each cut.
The sentence encoder itself is not needed here."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("hand", "probe", "fresh", "recheck2")  # small author folders: a fast fit


def bench(name: str) -> ModuleType:
    """A bench script as a module (capture_semantic sets OPENBLAS_NUM_THREADS
    for its own runs: not left set for the other tests)."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    spec.loader.exec_module(module)
    if before is None:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
    return module


@pytest.fixture(scope="module")
def corpus() -> tuple[ModuleType, list[dict[str, Any]]]:
    semantic = bench("capture_semantic")
    trainer = bench("train_capture")
    messages = [m for m in trainer.load_corpus() if m["author"] in FOLDERS]
    return semantic, messages


def test_sparse_trainer_is_train_capture(corpus: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    semantic, messages = corpus
    trainer, cv = bench("train_capture"), bench("capture_cv")
    held = [i for i, m in enumerate(messages) if m["author"] == "fresh"]
    rows = np.array([i for i, m in enumerate(messages) if m["author"] != "fresh"])
    fast = semantic.WordModel(semantic.Design(messages), rows)
    # the port fits as train_capture does before its pruning (PRUNE, round 3)
    exact = trainer.train([messages[i] for i in rows], prune=0.0)
    assert fast.names == exact.names
    assert np.abs(fast.weights - exact.weights).max() < 1e-3
    assert np.abs(fast.rules - exact.rules).max() < 1e-3
    assert np.abs(fast.bias - exact.bias).max() < 1e-3
    model = cv.as_model(exact)
    for i in held:
        assert semantic.scan_with(messages[i], fast.model) == cv.predict(messages[i], model)


def test_scanned_at_a_cut_is_a_scan_at_that_cut(
    corpus: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    semantic, messages = corpus
    from memstrata.capture.scorer import Model

    rows = np.arange(len(messages))
    fitted = semantic.WordModel(semantic.Design(messages), rows, threshold=0.5)
    for cut in (0.5, 0.7, 0.9):
        at_cut = Model(
            fitted.names, fitted.weights.tolist(), fitted.rules.tolist(), fitted.bias.tolist(), cut
        )
        for message in messages[::3]:
            scanned = semantic.Scanned(message, fitted.model, None, semantic.logit(0.5))
            assert scanned.at(cut) == semantic.scan_with(message, at_cut)
