"""Sentence embeddings, computed locally: no network, no key.

An :class:`Embedder` turns texts into unit vectors: ``embed(texts)`` returns a
float32 array of shape ``(len(texts), dim)`` whose rows have L2 norm 1, in the
order of ``texts``; ``embed([])`` has shape ``(0, dim)``. ``name`` identifies
the vectors: two embedders with the same name give the same vector for the
same text, so stored vectors of another name must not be compared.

``load_embedder(spec, model=None, tokenizer=None)`` picks one:

* ``None`` or ``"minilm"``: :class:`~memstrata.embed.onnx.MiniLMEmbedder`,
  all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions) on onnxruntime, or the ONNX
  file ``model`` (with ``tokenizer``; the settings ``embed_model`` and
  ``embed_tokenizer``, which the entry points take from
  ``$MEMSTRATA_EMBED_MODEL`` and ``$MEMSTRATA_EMBED_TOKENIZER``). Loaded once
  per process and shared (per model and tokenizer). Its packages are memstrata's
  own dependencies; if one is missing, ``BackendUnavailable`` says which.
* ``"static"``: :class:`~memstrata.embed.static.StaticEmbedder`, MiniLM
  distilled into a table of one 128-number row per token (shipped inside
  memstrata, pinned by SHA-256): a text's vector is the normalised mean of
  its tokens' rows. No onnxruntime (numpy and tokenizers only): about 0.2 ms
  a query inside a search rather than ~4-5 ms, and a faster start; lower
  recall (docs/search.md). ``model`` is another table file
  (``bench/distill_static.py``); a ``tokenizer`` is ``BackendUnavailable``
  (the table's rows are the vendored tokenizer's vocabulary). Loaded once per
  process.
* ``"hash"``: :class:`HashEmbedder`, a feature-hashing bag of words with NO
  semantic knowledge ("cat" and "kitten" are unrelated to it). It is for
  tests and for an explicit, informed fallback; it is never chosen silently,
  in particular not when MiniLM fails to load.
* ``"none"``: embeddings are turned off; raises ``BackendUnavailable``.

``plugged_embedder(obj)`` takes any object with ``name``, ``dim`` and
``embed(texts)`` (qracer plugs in any embedding function:
``Memory.open(path, embedder=MyEmbedder())``): it is checked once, and its
every answer is checked (shape, finite numbers) and its rows normalised; an
exception it raises or a wrong answer is ``BackendUnavailable`` naming it.

Importing this package imports neither numpy, onnxruntime nor tokenizers;
they load on first use, so the CLI starts fast.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import BackendUnavailable, InvalidInput
from ..model import Embedder  # the protocol (a value type: settings hold one)
from .onnx import MiniLMEmbedder, check_texts
from .static import StaticEmbedder

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "StaticEmbedder",
    "clear_embedder_cache",
    "load_embedder",
    "plugged_embedder",
]

SPECS = ("minilm", "static", "hash", "none")


_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Deterministic bag-of-words vectors by feature hashing: a test/fallback embedder.

    Each word token (``\\w+`` after case folding, any script) is hashed with
    BLAKE2b into one of ``dim`` buckets; the counts are L2-normalised. The
    same text gives the same vector in every process and on every machine.
    Texts sharing words get a positive cosine; it knows nothing of meaning,
    synonyms or languages. A text with no word token gets the vector of the
    empty token, so every row still has norm 1.
    """

    name: str
    dim: int

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise InvalidInput(f"dim must be at least 1, got {dim}")
        self.dim = dim
        self.name = f"hash-bow-{dim}"

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"

    def _bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Float32 ``(len(texts), dim)``, rows L2-normalised, in input order."""
        import numpy as np

        items = check_texts(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            tokens = _WORD.findall(text.casefold()) or [""]
            for token in tokens:
                out[row, self._bucket(token)] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


# (spec, model or table, tokenizer) -> the process-wide embedder
_CACHE: dict[tuple[str, str, str], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def _shared(spec: str, model: str | None, tokenizer: str | None) -> Embedder:
    """The process-wide embedder of ``spec`` ("minilm" or "static") with
    ``model`` and ``tokenizer``, built once (a failure is not cached)."""
    key = (spec, (model or "").strip(), (tokenizer or "").strip())
    if spec == "static" and key[2]:
        raise BackendUnavailable(
            "the static embedder takes no tokenizer (its table is the vendored "
            "tokenizer's vocabulary); unset embed_tokenizer / MEMSTRATA_EMBED_TOKENIZER"
        )
    with _CACHE_LOCK:
        embedder = _CACHE.get(key)
        if embedder is None:
            built: Embedder = (
                MiniLMEmbedder(key[1] or None, key[2] or None)
                if spec == "minilm"
                else StaticEmbedder(key[1] or None)
            )
            embedder = _CACHE[key] = built
        return embedder


def clear_embedder_cache() -> None:
    """Forget the shared MiniLM and static embedders (the next ``load_embedder`` loads again)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def load_embedder(
    spec: str | None = None, *, model: str | None = None, tokenizer: str | None = None
) -> Embedder:
    """The embedder named by ``spec`` (``None``/"minilm", "static", "hash", "none"); see
    the docstring.

    ``model`` and ``tokenizer``: another ONNX file and its ``tokenizer.json``
    for "minilm" (``None``: the pinned default model, the vendored tokenizer);
    another table file for "static" (no tokenizer).

    Raises ``BackendUnavailable`` when the embedder cannot be used (missing
    extra, bad model file, hash mismatch, or ``"none"``) and ``InvalidInput``
    for an unknown spec. Never substitutes one embedder for another.
    """
    choice = "minilm" if spec is None else spec.strip().lower()
    if choice in ("minilm", "static"):
        return _shared(choice, model, tokenizer)
    if choice == "hash":
        return HashEmbedder()
    if choice == "none":
        raise BackendUnavailable("embeddings are turned off")
    raise InvalidInput(f"unknown embedder {spec!r}; expected one of: {', '.join(SPECS)}")


class _Plugged:
    """A caller's embedder behind the package's guarantees (see the docstring)."""

    def __init__(self, inner: object, name: str, dim: int) -> None:
        self._inner = inner
        self.name = name
        self.dim = dim

    def __repr__(self) -> str:
        return f"plugged_embedder({self._inner!r})"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            raw = self._inner.embed(items)  # type: ignore[attr-defined]
            out = np.asarray(raw, dtype=np.float32)
        except Exception as exc:  # a caller's code: any failure is the backend's
            raise BackendUnavailable(f"embedder {self.name!r} failed: {exc!r}") from exc
        if out.shape != (len(items), self.dim) or not np.isfinite(out).all():
            raise BackendUnavailable(
                f"embedder {self.name!r} returned shape {out.shape} (or non-finite numbers) "
                f"for {len(items)} text(s); expected ({len(items)}, {self.dim})"
            )
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


def plugged_embedder(obj: object) -> Embedder:
    """``obj`` (``name``: a non-empty string, ``dim``: a whole number >= 1,
    ``embed(texts)``: a ``(len(texts), dim)`` array) as an ``Embedder``
    (one already plugged: as it is); ``InvalidInput`` says what it lacks."""
    if isinstance(obj, _Plugged):
        return obj
    name = getattr(obj, "name", None)
    dim = getattr(obj, "dim", None)
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput(f"an embedder needs a name (a non-empty string); {obj!r} has {name!r}")
    if name.strip().lower() in SPECS:
        raise InvalidInput(f"an embedder object may not take the built-in name {name!r}")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InvalidInput(f"an embedder needs dim (a whole number >= 1); {obj!r} has {dim!r}")
    if not callable(getattr(obj, "embed", None)):
        raise InvalidInput(f"an embedder needs an embed(texts) method; {obj!r} has none")
    return _Plugged(obj, name, dim)
