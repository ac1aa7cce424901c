"""Static sentence embeddings: MiniLM distilled into one row per WordPiece token.

``StaticEmbedder().embed(texts)`` tokenizes each text with the vendored
MiniLM tokenizer (no ``[CLS]``/``[SEP]``) and returns the L2-normalised mean
of its tokens' rows of a table shipped inside memstrata
(``data/static-minilm-128.bin``, see ``data/NOTICE``). The table was
distilled from the pinned all-MiniLM-L6-v2 (``bench/distill_static.py``, the
model2vec method): every vocabulary token run through MiniLM alone, PCA to
128 dimensions, rows weighted by a Zipf/SIF frequency prior, int8 with a
scale per row (4 MB). No network, no
onnxruntime: numpy and tokenizers only, imported in the constructor.

Guarantees (those of ``memstrata.embed``):

* the default table is pinned: its SHA-256 must be
  :data:`DEFAULT_TABLE_SHA256` (the bytes hashed are the bytes used), else
  ``BackendUnavailable`` names the expected and the actual hash. Another
  table (``table_path``) is not checked; ``name`` then carries the first 12
  hex digits of its SHA-256, so vectors of different tables never share a
  name (``static:<stem>:<sha12>``);
* rows have L2 norm 1, come back in input order, and do not depend on the
  batch (each text is summed alone); the same text gives the same vector;
* a text with no token (the empty string, only spaces) gets the table's last
  row, MiniLM's vector of the empty text; a text longer than ``max_length``
  tokens (512 by default) is truncated, never refused (``@<max_length>`` in
  ``name`` for another value).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BackendUnavailable, InvalidInput
from .onnx import check_texts

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "DEFAULT_TABLE",
    "DEFAULT_TABLE_NAME",
    "DEFAULT_TABLE_SHA256",
    "StaticEmbedder",
    "TableHeader",
    "read_table",
    "vendored_tokenizer_bytes",
    "write_table",
]

#: The table shipped in ``data/`` and its SHA-256 (``bench/distill_static.py``).
DEFAULT_TABLE = "static-minilm-128.bin"
DEFAULT_TABLE_SHA256 = "ca0f8ac79c319550aaf1e493285a00727a781165ea1e9799b20f1d7df5997027"
#: The ``name`` of the default table's vectors: it ends with the pin's first 12
#: hex digits, so that another shipped table never shares a name with this one
#: (``index/relevance.py`` keys this table's floor by it).
DEFAULT_TABLE_NAME = "static-minilm-128-int8:ca0f8ac79c31"
DEFAULT_MAX_LENGTH = 512
INSTALL_HINT = "they are memstrata's own dependencies: reinstall it (pip install memstrata)"
MAGIC = b"MEMSTRATA-STATIC-1\n"
_ALIGN = 64


@dataclass(frozen=True, slots=True)
class TableHeader:
    """What a table file holds: ``rows`` rows (the vocabulary, then the empty
    text) of ``dim`` numbers, ``int8`` with a float32 scale per row or
    ``float16``; ``sif`` and ``teacher`` (the model's SHA-256) say how it was made."""

    dim: int
    rows: int
    dtype: str
    sif: float
    teacher: str


def write_table(header: TableHeader, table: NDArray[np.float32]) -> bytes:
    """The file's bytes: ``MAGIC``, the header as one JSON line padded to 64
    bytes, the matrix (and, for int8, the float32 scales), little-endian."""
    import numpy as np

    if table.shape != (header.rows, header.dim):
        raise InvalidInput(f"table shape {table.shape} != ({header.rows}, {header.dim})")
    head = MAGIC + json.dumps(asdict(header), sort_keys=True).encode("ascii") + b"\n"
    head += b" " * (-len(head) % _ALIGN)
    if header.dtype == "float16":
        return head + np.asarray(table, dtype="<f2").tobytes()
    if header.dtype != "int8":
        raise InvalidInput(f"dtype must be int8 or float16, not {header.dtype!r}")
    scales = np.abs(table).max(axis=1) / 127.0
    scales = np.where(scales > 0, scales, 1.0).astype(np.float32)
    quantised = np.clip(np.rint(table / scales[:, None]), -127, 127).astype(np.int8)
    body: bytes = quantised.tobytes() + np.asarray(scales, dtype="<f4").tobytes()
    return head + body


def read_table(data: bytes, where: str) -> NDArray[np.float32]:
    """The float32 ``(rows, dim)`` table of a file's bytes (BackendUnavailable if malformed)."""
    import numpy as np

    try:
        if not data.startswith(MAGIC):
            raise ValueError("not a memstrata static table")
        end = data.index(b"\n", len(MAGIC))
        fields = json.loads(data[len(MAGIC) : end])
        header = TableHeader(**fields)
        start = end + 1 + (-(end + 1) % _ALIGN)
        cells = header.rows * header.dim
        if header.dtype == "float16":
            matrix = np.frombuffer(data, "<f2", cells, start).astype(np.float32)
            body = 2 * cells
        elif header.dtype == "int8":
            quantised = np.frombuffer(data, np.int8, cells, start)
            scales = np.frombuffer(data, "<f4", header.rows, start + cells)
            matrix = (quantised.reshape(header.rows, header.dim) * scales[:, None]).ravel()
            body = cells + 4 * header.rows
        else:
            raise ValueError(f"unknown dtype {header.dtype!r}")
        if start + body != len(data) or header.rows < 2 or header.dim < 1:
            raise ValueError(f"{len(data)} bytes do not match the header {fields}")
    except (ValueError, TypeError, RecursionError) as exc:
        raise BackendUnavailable(f"static embedding table {where} is malformed: {exc}") from exc
    return np.asarray(matrix.reshape(header.rows, header.dim), dtype=np.float32)


def vendored_tokenizer_bytes() -> bytes:
    """The bytes of the MiniLM ``tokenizer.json`` shipped in ``data/``."""
    root = importlib.resources.files(__package__ or "memstrata.embed")
    return root.joinpath("data", "tokenizer.json").read_bytes()


def _default_table() -> tuple[bytes, str]:
    """The shipped table's bytes, checked against the pin, and where it is."""
    resource = importlib.resources.files(__package__ or "memstrata.embed").joinpath(
        "data", DEFAULT_TABLE
    )
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise BackendUnavailable(
            f"the static embedding table {resource} cannot be read ({exc}): {INSTALL_HINT}"
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != DEFAULT_TABLE_SHA256:
        raise BackendUnavailable(
            f"static embedding table {resource} has the wrong SHA-256: expected "
            f"{DEFAULT_TABLE_SHA256}, actual {actual}; {INSTALL_HINT}"
        )
    return data, str(resource)


def _load_tokenizer(max_length: int) -> Tokenizer:
    """The vendored tokenizer, truncating at ``max_length``, no padding, no special tokens."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(vendored_tokenizer_bytes().decode("utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


class StaticEmbedder:
    """MiniLM distilled to a token table; see the module docstring.

    ``table_path``: another table file (``bench/distill_static.py --out``);
    ``None``: the pinned table shipped in memstrata. Loading reads about
    4 MB once per process (``memstrata.embed.load_embedder`` caches it);
    ``embed`` is safe to call from several threads.
    """

    name: str
    dim: int

    def __init__(
        self, table_path: str | Path | None = None, *, max_length: int = DEFAULT_MAX_LENGTH
    ) -> None:
        if max_length < 1:
            raise InvalidInput(f"max_length must be at least 1 token, got {max_length}")
        for module in ("numpy", "tokenizers"):
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise BackendUnavailable(
                    f"static embeddings need {module}, which cannot be imported ({exc}): "
                    f"{INSTALL_HINT}"
                ) from exc
        if table_path is None:
            data, where = _default_table()
            name = DEFAULT_TABLE_NAME
        else:
            path = Path(table_path).expanduser()
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise BackendUnavailable(
                    f"cannot read static embedding table {path}: {exc.strerror or exc}"
                ) from exc
            where = str(path)
            name = f"static:{path.stem}:{hashlib.sha256(data).hexdigest()[:12]}"
        self.table_path = where
        self.max_length = max_length
        self._table = read_table(data, where)
        self._tokenizer = _load_tokenizer(max_length)
        if self._tokenizer.get_vocab_size() + 1 != self._table.shape[0]:
            raise BackendUnavailable(
                f"static embedding table {where} has {self._table.shape[0]} rows; the "
                f"tokenizer needs {self._tokenizer.get_vocab_size() + 1}"
            )
        self.dim = int(self._table.shape[1])
        self.name = name if max_length == DEFAULT_MAX_LENGTH else f"{name}@{max_length}"

    def __repr__(self) -> str:
        return f"StaticEmbedder(name={self.name!r}, dim={self.dim}, table={self.table_path!r})"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Float32 array ``(len(texts), dim)``, rows L2-normalised, in input order."""
        import numpy as np

        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(items, add_special_tokens=False)
        empty = self._table.shape[0] - 1
        ids = [enc.ids or [empty] for enc in encodings]
        counts = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=counts.sum())
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        sums = np.add.reduceat(self._table[flat], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return np.asarray(sums / np.maximum(norms, 1e-12), dtype=np.float32)
