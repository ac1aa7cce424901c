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
``capture/data/scorer.bin`` (``dump_model``'s format, read without numpy: a
shell hook's ``observe`` does not pay numpy's import); its figures,
cross-validated by language and by author, are measured by
``bench/capture_cv.py`` (docs/capture.md).

The weights file: ``MAGIC``, the header's length (4 bytes, little-endian),
the header (UTF-8 JSON: ``durable``, ``rule_categories``, ``threshold``,
``rules`` and ``bias`` as lists of floats, ``names`` and ``names_bytes``),
the feature names (UTF-8, one per line, ``names_bytes`` long), then one row of
``len(durable)`` little-endian float16 weights per name. A logit is the
sum, in float64 (``math.fsum``), of the bias, the rows of the text's features
and the rows of the rules' verdicts (within 1e-6 of numpy's float64 sum of the
same rows: tests/test_capture_scorer.py). ``additions`` asks ``Model.wanted``
which categories reach the cut: told from the packed sums without unpacking
them, and on a quarter of the bench's texts from an upper bound before any
pair is looked up (``_Gates``); the same answer as the logits and the cut
(tested).

Guarantees: ``features`` is a pure function of the text; the model is read
once, lazily; a missing, unreadable or malformed weights file (wrong magic,
lengths, categories or shapes) disables the scorer (the rules alone answer)
rather than failing a scan; ``additions`` never raises on any text and never
proposes a category the rules found.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import struct
import threading
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "DURABLE",
    "RULE_CATEGORIES",
    "Model",
    "additions",
    "dump_model",
    "features",
    "load_model",
    "parse_model",
]

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
MAGIC = b"MSSCORE1"
WEIGHTS = Path(__file__).with_name("data") / "scorer.bin"
_LENGTH = struct.Struct("<I")
_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\d_]+|\d+|[?？!！:：,，;；—-]"
)
_WORDS = re.compile(r"[^\W\d_]+|\d+|[?？!！:：,，;；—-]")  # _TOKEN for text without CJK
# _WORDS for lower-cased ASCII text: ``[a-z]+|[0-9]+|[?!:,;-]`` (tested), led by
# one class so that ``re`` skips to a token's start in C
_ASCII = re.compile(r"[a-z0-9?!:,;-](?:(?<=[a-z])[a-z]*|(?<=[0-9])[0-9]*|)")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CACHED = 1 << 16  # tokens whose summed weights are kept
# The exact sums (``Model.logits``): a vector or row whose weights are multiples
# of 2**-24 below 2**16 (every float16 is; a token's vector sums a few) is
# held as ``weight * 2**24`` in one 64-bit field per column of a packed int
# (``_Packed``, each field offset by ``_HALF`` when unpacked); at most
# ``_EXACT_TOKENS`` tokens and as many pairs keep every field's sum below
# 2**53: exact as an int and as a float.
_SCALE = float(1 << 24)
_LIMIT = float(1 << 40)  # a scaled weight's bound
_HALF = 1 << 63  # each field is offset by it to unpack as unsigned
_EXACT_TOKENS = 1 << 12
# ``[.!?…]+(?=\s)|[。！？；\n]+|[.!?…]+$`` led by one character class, so that
# ``re`` skips to a candidate in C (the same spans, tested; as ``scan``'s)
_SENTENCE_END = re.compile(
    r"[.!?…。！？；\n](?:(?<=[.!?…])[.!?…]*(?=\s|\Z)|(?<=[。！？；\n])[。！？；\n]*)"
)
_VISIBLE = re.compile(r"\S")  # a character ``str.isspace`` is false for
_END = re.Match.end

Row = tuple[float, ...]


def tokens(text: str, lowered: str | None = None) -> list[str]:
    """The tokens of ``text``, lower-cased, between ``^`` and ``$``
    (``lowered``: ``text.lower()``, when the caller has it)."""
    if lowered is None:
        lowered = text.lower()
    if lowered.isascii():  # no CJK, and ``\w``, ``\d`` are their ASCII parts
        return ["^", *_ASCII.findall(lowered), "$"]
    # lower() maps no character into or out of the CJK ranges
    return ["^", *(_TOKEN if _CJK.search(lowered) else _WORDS).findall(lowered), "$"]


def features(text: str) -> list[str]:
    """The feature names of ``text``: tokens, ``stem~`` prefixes, ``a b`` pairs."""
    toks = tokens(text)
    stems = [tok[:4] + "~" for tok in toks if len(tok) > 4]
    pairs = [f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)]
    stems += [f"{w[i : i + 3]}#" for w in toks if len(w) > 4 for i in range(len(w) - 2)]
    return toks + stems + pairs


def _column_sums(rows: Sequence[Row]) -> Row:
    """The correctly rounded sum of ``rows``, column by column."""
    return tuple(map(math.fsum, zip(*rows, strict=False)))  # every row is as wide (Model)


class Model:
    """Weights for ``DURABLE``: one row per feature name (a pair's name is
    ``"a b"``), then rule rows, bias; each row ``len(DURABLE)`` floats."""

    __slots__ = (
        "index",
        "flat",
        "width",
        "rules",
        "bias",
        "zero",
        "cut",
        "seen",
        "lock",
        "pairs",
        "firsts",
        "packed",
        "packed_pairs",
        "exact",
        "fields",
        "offset",
        "bases",
        "gates",
    )

    def __init__(
        self,
        names: Sequence[str],
        weights: Sequence[Sequence[float]] | Sequence[float],
        rules: Sequence[Sequence[float]],
        bias: Sequence[float],
        threshold: float = THRESHOLD,
    ) -> None:
        """``weights``: one row per name (numpy's ``tolist()`` will do), or
        all rows flattened into one sequence of floats."""
        self.index: dict[str, int] = dict(zip(names, range(len(names)), strict=True))
        self.bias: Row = tuple(map(float, bias))
        self.width = len(self.bias)
        self.flat: Row = tuple(
            map(float, weights if len(weights) != len(names) else _flatten(weights))
        )
        if len(self.flat) != self.width * len(names):
            raise ValueError("scorer weights do not have one row per name")
        self.rules: list[Row] = [tuple(map(float, row)) for row in rules]
        if any(len(row) != self.width for row in self.rules):
            raise ValueError("scorer rule rows are not as wide as the bias")
        self.cut = math.log(threshold / (1.0 - threshold))
        self.zero: Row = (0.0,) * self.width
        # token -> the sum of its token, stem and trigram weights (while room lasts)
        self.seen = _Vectors(self)
        self.lock = threading.Lock()
        # (a, b) -> the row of the pair ``"a b"``: tokens hold no space, so a
        # pair's name is one with a single space between two non-empty parts
        self.pairs: dict[tuple[str, str], Row] = {}
        self.firsts: dict[str, list[Row]] = {}  # a -> the rows of the pairs ``"a b"``
        for name, at in self.index.items():
            first, space, second = name.partition(" ")
            if space and first and second and " " not in second:
                row = self.pairs[first, second] = self.row(at)
                self.firsts.setdefault(first, []).append(row)
        # token / pair -> its vector or row as one packed int (``_Packed``);
        # ``exact`` while every one packed is a multiple of 2**-24 below 2**16.
        # A token's int holds, past its vector's fields, as many fields of its
        # vector plus its best pair row (``_best_pair``): their sum bounds the
        # logits from above before any pair is looked up (``wanted``)
        self.packed = _Packed(self, self._vector_of, self._best_pair)
        self.packed_pairs = _Packed(self, self.pairs.__getitem__)
        self.exact = True
        self.fields = struct.Struct(f"<{self.width}Q")
        self.offset = sum(_HALF << (64 * column) for column in range(2 * self.width))
        # the rules' verdicts (one bool per RULE_CATEGORIES) -> the bias plus
        # their rows, where float64 holds that sum exactly (``_Bases``)
        self.bases = _Bases(self)
        # the same verdicts -> the packed test of whether a logit reaches the cut
        self.gates = _Gates(self)

    def row(self, at: int) -> Row:
        """The weights of the feature name at row ``at``."""
        return self.flat[at * self.width : (at + 1) * self.width]

    def _rows(self, token: str) -> list[int]:
        """The rows of the weights a token's own features (not its pairs) use."""
        get, names = self.index.get, [token]
        if len(token) > 4:
            names.append(token[:4] + "~")
            names += [token[i : i + 3] + "#" for i in range(len(token) - 2)]
        return [row for name in names if (row := get(name)) is not None]

    def _vector_of(self, token: str) -> Row:
        """The summed weights of ``token``'s own features, worked out."""
        return _column_sums([self.zero, *map(self.row, self._rows(token))])

    def _best_pair(self, token: str) -> Row:
        """Per column, the most any pair ``token`` starts can add (0.0 at least)."""
        rows = self.firsts.get(token)
        return tuple(map(max, self.zero, *rows)) if rows else self.zero

    def _vector(self, token: str) -> Row:
        """The summed weights of ``token``'s own features, cached while room lasts."""
        return self.seen[token]

    def logits(self, text: str, hits: Collection[str], lowered: str | None = None) -> Row:
        """One logit per ``DURABLE`` category for ``text`` whose rules found ``hits``
        (``lowered``: ``text.lower()``, when the caller has it): the rows are
        looked up by C-level maps (``seen`` fills itself), and ``math.fsum``,
        correctly rounded, makes their order irrelevant.

        While the weights are ``exact`` (float16's are), the tokens' vectors and
        the pair rows are packed ints (``_Packed``) that one ``sum`` adds
        without rounding, and the bias and the rule rows are added to that
        with one rounding: the same floats as the ``fsum`` of every row."""
        return self._logits(tokens(text, lowered), hits)

    def _logits(self, toks: list[str], hits: Collection[str]) -> Row:
        """``logits`` of the tokens ``toks``: packed where exact, else summed."""
        packed = self._packed(toks)
        if packed is not None:
            return self._unpacked(packed, hits)
        return self._summed(toks, hits)

    def wanted(self, text: str, hits: Collection[str], lowered: str | None = None) -> list[int]:
        """The positions in ``DURABLE`` of the categories not in ``hits`` whose
        logit for ``text`` reaches the cut: those of ``logits`` (tested). On
        the packed path, the verdicts' ``_Gate`` tells first, from the packed
        sums themselves, whether any does (most texts: none)."""
        toks = tokens(text, lowered)
        logits = None
        if self.exact and len(toks) <= _EXACT_TOKENS:
            bound: int = sum(map(self.packed.__getitem__, toks))
            gate = self.gates[tuple(map(hits.__contains__, RULE_CATEGORIES))]
            if gate is not None and self.exact:
                if not (bound + gate[2]) & gate[3]:  # not even the bound reaches the cut
                    return []
                packed = bound + self._pair_sum(toks)
                if self.exact:
                    if not (packed + gate[0]) & gate[1]:
                        return []
                    logits = self._unpacked(packed, hits)
        if logits is None:
            logits = self._logits(toks, hits)
        cut = self.cut
        return [at for at, cat in enumerate(DURABLE) if cat not in hits and logits[at] >= cut]

    def _packed(self, toks: list[str]) -> int | None:
        """The packed sum of the tokens' vectors and the pair rows, or None
        where the packed sums are off (not ``exact``, or too many tokens)."""
        if not self.exact or len(toks) > _EXACT_TOKENS:
            return None
        packed: int = sum(map(self.packed.__getitem__, toks)) + self._pair_sum(toks)
        return packed if self.exact else None  # no vector or row packed broke the bounds

    def _pair_sum(self, toks: list[str]) -> int:
        """The packed sum of the rows of the known pairs of adjacent tokens."""
        known = filter(self.pairs.__contains__, zip(toks, toks[1:], strict=False))
        return sum(map(self.packed_pairs.__getitem__, known))

    def _unpacked(self, packed: int, hits: Collection[str]) -> Row:
        """The logits from a packed sum (``_packed``) and the rules' verdicts."""
        fields = (packed + self.offset).to_bytes(16 * self.width, "little")
        sums = tuple(map(_unscale, self.fields.unpack_from(fields)))
        if not hits:
            return tuple(map(float.__add__, self.bias, sums))
        base = self.bases[tuple(map(hits.__contains__, RULE_CATEGORIES))]
        if base is not None:  # the fsum of base and sums: one rounding
            return tuple(map(float.__add__, base, sums))
        found = [self.rules[at] for at, cat in enumerate(RULE_CATEGORIES) if cat in hits]
        return _column_sums([self.bias, sums, *found])

    def _summed(self, toks: list[str], hits: Collection[str]) -> Row:
        """The logits as the ``fsum`` of every row (the reference path)."""
        rows: list[Row] = [self.bias, *map(self.seen.__getitem__, toks)]
        pairs = zip(toks, toks[1:], strict=False)
        rows += filter(None, map(self.pairs.get, pairs))  # a row is never ()
        if hits:
            rows += [self.rules[at] for at, cat in enumerate(RULE_CATEGORIES) if cat in hits]
        return _column_sums(rows)


def _unscale(field: int) -> float:
    """A packed sum's field as the float it stands for (exact below 2**53)."""
    return (field - _HALF) / _SCALE


class _Packed(dict[Any, int]):
    """token (or pair) -> its vector (or row) times 2**24, one 64-bit field per
    column, so that ``sum`` adds them all at once: worked out on a miss from
    ``source`` and kept while fewer than ``_CACHED`` are. One that is not a
    multiple of 2**-24 below 2**16 (every float16 is) turns the model's
    ``exact`` off: its logits are then ``fsum``'d row by row."""

    __slots__ = ("model", "source", "bound")

    def __init__(
        self, model: Model, source: Callable[[Any], Row], bound: Callable[[Any], Row] | None = None
    ) -> None:
        super().__init__()
        self.model, self.source, self.bound = model, source, bound

    def __missing__(self, key: Any) -> int:
        vector = self.source(key)
        extra = self.bound(key) if self.bound is not None else ()
        if not all(
            abs(value) < 65536.0 and (value * _SCALE).is_integer() for value in (*vector, *extra)
        ):
            self.model.exact = False
            return 0
        scaled = [int(value * _SCALE) for value in vector]
        scaled += [a + int(b * _SCALE) for a, b in zip(scaled, extra, strict=False)]
        packed = sum(value << (64 * column) for column, value in enumerate(scaled))
        with self.model.lock:
            if len(self) < _CACHED:
                self[key] = packed
        return packed


class _Bases(dict[tuple[bool, ...], Row | None]):
    """The rules' verdicts -> the bias plus the rows of the rules that found
    something, column by column, if each column's sum is exact in float64
    (``fsum`` of its terms and its negated sum is 0.0 exactly then), else
    None. An exact base makes ``fsum(bias, sums, *rows)`` the one rounding of
    ``base + sums``. Worked out on a miss: at most 2**6 of them."""

    __slots__ = ("model",)

    def __init__(self, model: Model) -> None:
        super().__init__()
        self.model = model

    def __missing__(self, verdicts: tuple[bool, ...]) -> Row | None:
        model = self.model
        chosen = list(itertools.compress(model.rules, verdicts))
        columns = list(zip(model.bias, *chosen, strict=True))
        base = tuple(map(math.fsum, columns))
        exact = all(
            math.fsum([*terms, -total]) == 0.0 for terms, total in zip(columns, base, strict=True)
        )
        with model.lock:
            self[verdicts] = found = base if exact else None
        return found


class _Gates(dict[tuple[bool, ...], tuple[int, int, int, int] | None]):
    """The rules' verdicts -> (offset, mask, bound offset, bound mask):
    ``(packed + offset) & mask`` is non-zero exactly when some category the
    verdicts lack has a logit at or above the cut, for a packed sum
    (``Model._packed``) of fields ``f`` below 2**53 in magnitude. A column's
    logit is ``base + f / 2**24`` rounded once, which does not decrease as
    ``f`` grows: the least ``f`` that reaches the cut, ``t`` (found by
    bisection on those very floats), is where the column's field of
    ``packed + offset`` (``f - t + 2**63``, in [0, 2**64)) gets its top bit,
    which ``mask`` keeps. The bound offset and mask test the same on the
    upper fields (the tokens' vectors plus their best pair rows, at least
    the sum the pairs make): zero there means no logit can reach the cut.
    None where the base is not exact (the ``fsum`` path decides). Worked out
    on a miss."""

    __slots__ = ("model",)

    def __init__(self, model: Model) -> None:
        super().__init__()
        self.model = model

    def __missing__(self, verdicts: tuple[bool, ...]) -> tuple[int, int, int, int] | None:
        model = self.model
        base = model.bases[verdicts]
        gate = None
        if base is not None:
            offset = bound = mask = 0
            upper = 64 * model.width  # where the bound's fields start
            for column, category in enumerate(DURABLE):
                least = _least(base[column], model.cut)
                offset += (_HALF - least) << (64 * column) | _HALF << (upper + 64 * column)
                bound += _HALF << (64 * column) | (_HALF - least) << (upper + 64 * column)
                if not verdicts[RULE_CATEGORIES.index(category)]:
                    mask |= 1 << (64 * column + 63)
            gate = (offset, mask, bound, mask << upper)
        with model.lock:
            self[verdicts] = gate
        return gate


def _least(base: float, cut: float) -> int:
    """The least ``f`` in [-2**53, 2**53] with ``base + f / 2**24 >= cut``
    (one rounding), or 2**53 where none below it does."""
    low, high = -(1 << 53), 1 << 53  # the answer is in [low, high]
    if base + low / _SCALE >= cut:
        return low
    while high - low > 1:  # base + low / S < cut, and high is the least known to reach it
        middle = (low + high) // 2
        if base + middle / _SCALE >= cut:
            high = middle
        else:
            low = middle
    return high


class _Vectors(dict[str, Row]):
    """token -> the summed weights of its own features: worked out on a miss
    (``__missing__``), and kept while fewer than ``_CACHED`` tokens are."""

    __slots__ = ("model",)

    def __init__(self, model: Model) -> None:
        super().__init__()
        self.model = model

    def __missing__(self, token: str) -> Row:
        model = self.model
        vector = _column_sums([model.zero, *map(model.row, model._rows(token))])
        with model.lock:
            if len(self) < _CACHED:
                self[token] = vector
        return vector


def _flatten(rows: Sequence[Any]) -> list[Any]:
    return [value for row in rows for value in row]


def dump_model(
    names: Sequence[str],
    weights: Sequence[Sequence[float]],
    rules: Sequence[Sequence[float]],
    bias: Sequence[float],
    threshold: float = THRESHOLD,
) -> bytes:
    """The weights file's bytes for a model (``parse_model`` reads them back;
    the weights are rounded to float16, the rules and bias kept as given)."""
    if any("\n" in name or not name for name in names):
        raise ValueError("a feature name is empty or holds a line break")
    blob = "\n".join(names).encode("utf-8")
    header = {
        "durable": list(DURABLE),
        "rule_categories": list(RULE_CATEGORIES),
        "threshold": float(threshold),
        "rules": [[float(v) for v in row] for row in rules],
        "bias": [float(v) for v in bias],
        "names": len(names),
        "names_bytes": len(blob),
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    flat = [float(v) for v in _flatten(weights)]
    return b"".join(
        (MAGIC, _LENGTH.pack(len(text)), text, blob, struct.pack(f"<{len(flat)}e", *flat))
    )


def parse_model(data: bytes) -> Model:
    """The model in a weights file's bytes (``dump_model``); ``ValueError``
    when they are not one."""
    start = len(MAGIC) + _LENGTH.size
    if not data.startswith(MAGIC) or len(data) < start:
        raise ValueError("not a scorer weights file")
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    try:
        header = json.loads(data[start : start + length].decode("utf-8"))
    except RecursionError as exc:
        raise ValueError("the scorer's header nests too deep") from exc
    if not isinstance(header, dict):
        raise ValueError("the scorer's header is not an object")
    count, size = header.get("names"), header.get("names_bytes")
    width, rules, bias = len(DURABLE), header.get("rules"), header.get("bias")
    threshold = header.get("threshold")
    if (
        header.get("durable") != list(DURABLE)
        or header.get("rule_categories") != list(RULE_CATEGORIES)
        or not _shaped(rules, len(RULE_CATEGORIES), width)
        or not _shaped([bias], 1, width)
        or not isinstance(threshold, float)
        or not 0.0 < threshold < 1.0
        or not isinstance(count, int)
        or not isinstance(size, int)
        or count < 1
        or size < 0
        or len(data) != start + length + size + 2 * width * count
    ):
        raise ValueError("the scorer's weights do not match its categories or its length")
    names = data[start + length : start + length + size].decode("utf-8").split("\n")
    if len(names) != count:
        raise ValueError("the scorer's names do not match their count")
    flat = struct.unpack_from(f"<{width * count}e", data, start + length + size)
    return Model(names, flat, rules, bias, threshold)  # type: ignore[arg-type]


def _shaped(rows: Any, count: int, width: int) -> bool:
    """Whether ``rows`` is ``count`` lists of ``width`` numbers."""
    return (
        isinstance(rows, list)
        and len(rows) == count
        and all(
            isinstance(row, list)
            and len(row) == width
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
            for row in rows
        )
    )


@lru_cache(maxsize=1)
def load_model() -> Model | None:
    """The shipped model, or None when its file is missing or unreadable."""
    try:
        return parse_model(WEIGHTS.read_bytes())
    except (OSError, ValueError):  # UnicodeError and json's errors are ValueErrors
        return None


def sentences(text: str) -> list[tuple[int, int]]:
    """The non-blank sentence spans of ``text``, in order: each runs from past
    the white space after a sentence end (or the text's start) through the
    next sentence end (or the text's end)."""
    out, start = [], 0
    visible = _VISIBLE.search
    for end in [*map(_END, _SENTENCE_END.finditer(text)), len(text)]:
        first = visible(text, start, end)
        if first is not None:
            out.append((first.start(), end))
        start = end
    return out


def additions(
    text: str,
    hits: Collection[str],
    model: Model | None = None,
    lowered: str | None = None,
) -> list[tuple[str, tuple[int, int]]]:
    """The durable categories the model finds in ``text`` beyond ``hits``
    (the rules' categories), each with the sentence that scores it highest
    (``lowered``: ``text.lower()``, when the caller has it)."""
    model = model or load_model()
    if model is None or not text or text.isspace():  # as ``not text.strip()``
        return []
    wanted = model.wanted(text, hits, lowered)
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
