"""Learned capture scorer: a linear model next to the rules, for paraphrases they miss.

The rules (``scan.py``) are the explainable first pass and the veto list; this
model only *adds* a durable category (``DURABLE``) that the rules did not find
in a message, on a sentence that no pack veto matches. It is logistic
regression, one weight vector per category, over

* word features of the lower-cased text: tokens (every CJK character is a
  token), for a word of five letters or more its
  first four letters (``stem~``, a crude stem for Russian and Uzbek endings)
  and its letter trigrams (``abc#``), and adjacent token pairs (``a b``), with
  ``^`` / ``$`` marking the start and the end;
* the rules' own verdicts: one feature per category the rules found.

Weights are trained by ``bench/train_capture.py`` (numpy, fixed seed, no
randomness in the optimiser) from the labelled corpus and shipped in
``capture/data/scorer.npz``; its figures, cross-validated by language and by
author, are measured by ``bench/capture_cv.py`` (docs/capture.md).

Guarantees: ``features`` is a pure function of the text; the model is read
once, lazily (numpy is imported only then); a missing or unreadable weights
file disables the scorer (the rules alone answer) rather than failing a scan;
``additions`` never raises on any text and never proposes a category the
rules found.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DURABLE", "RULE_CATEGORIES", "Model", "additions", "features", "load_model"]

DURABLE = ("correction", "proper_noun", "preference", "decision", "remember")
RULE_CATEGORIES = (
    "correction",
    "proper_noun",
    "preference",
    "decision",
    "specific_value",
    "remember",
)
THRESHOLD = 0.5
_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\d_]+|\d+|[?？!！:：,，;；—-]"
)
_WORDS = re.compile(r"[^\W\d_]+|\d+|[?？!！:：,，;；—-]")  # _TOKEN for text without CJK
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CACHED = 1 << 16  # tokens whose summed weights are kept
_SENTENCE_END = re.compile(r"[.!?…]+(?=\s)|[。！？；\n]+|[.!?…]+$")


def tokens(text: str) -> list[str]:
    """The tokens of ``text``, lower-cased, between ``^`` and ``$``."""
    found = (_TOKEN if _CJK.search(text) else _WORDS).findall(text.lower())
    return ["^", *found, "$"]


def features(text: str) -> list[str]:
    """The feature names of ``text``: tokens, ``stem~`` prefixes, ``a b`` pairs."""
    toks = tokens(text)
    stems = [tok[:4] + "~" for tok in toks if len(tok) > 4]
    pairs = [f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)]
    stems += [f"{w[i : i + 3]}#" for w in toks if len(w) > 4 for i in range(len(w) - 2)]
    return toks + stems + pairs


class Model:
    """Weights for ``DURABLE``: one row per feature name, then rule rows, bias."""

    __slots__ = (
        "np",
        "index",
        "pairs",
        "weights",
        "rules",
        "bias",
        "cut",
        "seen",
        "vectors",
        "lock",
    )

    def __init__(
        self,
        numpy: Any,
        names: Sequence[str],
        weights: np.ndarray,
        rules: np.ndarray,
        bias: np.ndarray,
        threshold: float = THRESHOLD,
    ) -> None:
        self.np = numpy
        self.index: dict[str, int] = {}
        self.pairs: dict[tuple[str, str], int] = {}
        for row, name in enumerate(names):
            first, space, second = name.partition(" ")
            if space:
                self.pairs[(first, second)] = row
            else:
                self.index[name] = row
        self.weights, self.rules, self.bias = weights, rules, bias
        self.cut = float(numpy.log(threshold / (1.0 - threshold)))
        # token -> row of ``vectors``: the sum of its token, stem and trigram weights
        self.seen: dict[str, int] = {}
        self.vectors = numpy.zeros((_CACHED, len(DURABLE)), dtype=numpy.float32)
        self.lock = threading.Lock()

    def _rows(self, token: str) -> list[int]:
        """The rows of ``weights`` a token's own features (not its pairs) use."""
        get, names = self.index.get, [token]
        if len(token) > 4:
            names.append(token[:4] + "~")
            names += [token[i : i + 3] + "#" for i in range(len(token) - 2)]
        return [row for name in names if (row := get(name)) is not None]

    def _vector(self, token: str) -> Any:
        """The summed weights of ``token``, cached (a row of ``vectors``) while room lasts."""
        with self.lock:
            slot = self.seen.get(token)
            if slot is not None:
                return slot
            vector = self.weights[self._rows(token)].sum(axis=0, dtype=self.np.float32)
            if len(self.seen) >= _CACHED:
                return vector
            slot = len(self.seen)
            self.vectors[slot] = vector  # written before the token is published
            self.seen[token] = slot
            return slot

    def logits(self, text: str, hits: Collection[str]) -> np.ndarray:
        """One logit per ``DURABLE`` category for ``text`` whose rules found ``hits``."""
        toks = tokens(text)
        seen, pget = self.seen.get, self.pairs.get
        found = [seen(tok) for tok in toks]
        slots = [slot for slot in found if slot is not None]
        extra = []
        if len(slots) < len(found):  # tokens met for the first time
            for token in (tok for tok, slot in zip(toks, found, strict=True) if slot is None):
                vector = self._vector(token)
                if isinstance(vector, int):
                    slots.append(vector)
                else:
                    extra.append(vector)
        rows = [
            row for pair in zip(toks, toks[1:], strict=False) if (row := pget(pair)) is not None
        ]
        total = self.bias + self.vectors[slots].sum(axis=0)
        if rows:
            total = total + self.weights[rows].sum(axis=0, dtype=self.np.float32)
        for vector in extra:
            total = total + vector
        for position, category in enumerate(RULE_CATEGORIES):
            if category in hits:
                total = total + self.rules[position]
        return total  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def load_model() -> Model | None:
    """The shipped model, or None when its file is missing or unreadable."""
    try:
        import numpy

        data = resources.files(__package__).joinpath("data", "scorer.npz")
        with data.open("rb") as handle, numpy.load(handle, allow_pickle=False) as npz:
            names = [str(name) for name in npz["names"]]
            return Model(
                numpy,
                names,
                npz["weights"].astype(numpy.float32),
                npz["rules"].astype(numpy.float32),
                npz["bias"].astype(numpy.float32),
                float(npz["threshold"]),
            )
    except (OSError, KeyError, ValueError, ImportError):
        return None


def sentences(text: str) -> list[tuple[int, int]]:
    """The non-blank sentence spans of ``text``, in order."""
    spans, start = [], 0
    for mark in _SENTENCE_END.finditer(text):
        spans.append((start, mark.end()))
        start = mark.end()
    spans.append((start, len(text)))
    out = []
    for begin, end in spans:
        while begin < end and text[begin].isspace():
            begin += 1
        if begin < end:
            out.append((begin, end))
    return out


def additions(
    text: str, hits: Collection[str], model: Model | None = None
) -> list[tuple[str, tuple[int, int]]]:
    """The durable categories the model finds in ``text`` beyond ``hits``
    (the rules' categories), each with the sentence that scores it highest."""
    model = model or load_model()
    if model is None or not text.strip():
        return []
    logits = model.logits(text, hits)
    wanted = [
        position
        for position, category in enumerate(DURABLE)
        if category not in hits and logits[position] >= model.cut
    ]
    if not wanted:
        return []
    spans = sentences(text)
    if len(spans) > 1:
        scored = [model.logits(text[start:end], hits) for start, end in spans]
    out = []
    for position in wanted:
        span = spans[0]
        if len(spans) > 1:
            span = spans[max(range(len(spans)), key=lambda i: float(scored[i][position]))]
        out.append((DURABLE[position], span))
    return out
