"""Ingest speed with vectors: turns/s acknowledged (journaled) and until every
vector is in, beside the embedding model's own throughput measured in the same run.

Turns are the LoCoMo dev utterances (``--data``; real chat lines), else
templated chat lines, cycled to ``--turns``. A turn counts as acknowledged
when ``record_turn`` returned: its transcript line, audit lines and daily note
are written and fsynced (durable). No rate here counts a write that was not
acknowledged.

* ``one_at_a_time``: as an agent does, ``record_turn`` per turn (the
  utterance and a short reply, ``--reply``), then ``reindex`` (chunking, SQLite
  indexing and embedding every new chunk): ``ack_turns_per_s`` (recording
  alone), ``vectors_s`` (the reindex) and ``turns_per_s`` (turns over both:
  every turn searchable with its vectors);
* ``synced`` (``--synced``): the same, but the index synced (``reindex``)
  after every turn, as an agent that searches each turn does: with contextual
  vectors a turn also re-embeds the window of the turn before it;
* ``batched``: the same turns through ``record_turns`` (group commit) in
  batches of ``--batch`` (one fsync per file a batch touches instead of three
  per turn; acknowledged when the call returned), then ``reindex``: the same
  figures;
* ``bulk``: ``memstrata bench locomo``'s ingest (``record_conversation``: every
  utterance a turn with its speaker and date, no reply, one ``record_turns``
  per conversation, then ``reindex``), the same figures;
* in each: ``texts_embedded`` (what reached the model, after the batch's
  deduplication), ``texts_per_turn``, ``embed_s`` (time inside the model's
  ``embed``) and its share of the whole;
* ``model``: the embedder alone on the texts ``bulk`` embedded, in its own
  batching: ``texts_per_s`` and CPU ms per text (process time, all threads);
  ``ceiling_turns_per_s`` is that rate over ``texts_per_turn``: no pipeline,
  cache or transaction batching can ingest faster without embedding fewer texts
  or a faster model; ``by_batch_size``: CPU ms per text and texts/s at each
  internal batch size (``--batch-sizes``), interleaved, median of 3;
* ``load_avg`` before and after, and ``baseline_python_s`` (``python -c pass``,
  median of 3) measured in the same run, so that figures from a loaded machine
  can be read.

Run::

    .venv/bin/python bench/bench_ingest.py --json bench/results/ingest.json

``--embedder static`` measures the static table instead of MiniLM (no
``by_batch_size``: it has no internal batches).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_history import PLACES, TEMPLATES  # the same stand-in lines without LoCoMo
from benchutil import emit, machine
from memstrata import Memory
from memstrata.benchmarks import locomo
from memstrata.benchmarks.retrievers import record_conversation
from memstrata.embed import Embedder, MiniLMEmbedder, load_embedder

ROOT = Path(__file__).resolve().parent.parent
_DEV = Path("shared", "data", "locomo", "locomo_dev.json")
# the main checkout's neighbour, or a worktree's (``wt/<name>``)
DATA = next((p for p in (ROOT.parent / _DEV, ROOT.parent.parent / _DEV) if p.exists()), ROOT / _DEV)


class Counted:
    """Counts the texts that reach ``kind.embed`` and the time spent in it."""

    def __init__(self, kind: type[Any]) -> None:
        self.texts: list[str] = []
        self.seconds = 0.0
        self.kind = kind
        self._original: Callable[..., Any] = kind.embed

    def __enter__(self) -> Counted:
        original, counter = self._original, self

        def embed(embedder: Embedder, texts: Sequence[str]) -> Any:
            began = time.perf_counter()
            try:
                return original(embedder, texts)
            finally:
                counter.seconds += time.perf_counter() - began
                counter.texts += list(texts)

        self.kind.embed = embed
        return self

    def __exit__(self, *_: object) -> None:
        self.kind.embed = self._original


def utterances(data: Path | None, count: int) -> list[str]:
    texts: list[str] = []
    if data is not None and data.exists():
        for conversation in locomo.load(data):
            texts += [turn.text for session in conversation.sessions for turn in session.turns]
    if not texts:
        texts = [t.format(p=p) for t in TEMPLATES for p in PLACES]
    return [texts[i % len(texts)] for i in range(count)]


EXTRA: dict[str, Any] = {}  # settings of every workspace the bench opens (--context-vectors)


def figures(turns: int, recorded: float, indexed: float, counted: Counted) -> dict[str, Any]:
    total = recorded + indexed
    return {
        "turns": turns,
        "ack_turns_per_s": round(turns / recorded, 1),
        "record_s": round(recorded, 3),
        "vectors_s": round(indexed, 3),
        "turns_per_s": round(turns / total, 1),
        "texts_embedded": len(counted.texts),
        "texts_per_turn": round(len(counted.texts) / turns, 3),
        "embed_s": round(counted.seconds, 3),
        "embed_share": round(counted.seconds / total, 3),
    }


def one_at_a_time(
    folder: Path, texts: list[str], reply: str, spec: str, synced: bool = False
) -> dict[str, Any]:
    """``record_turn`` per turn, then one ``reindex``; ``synced``: a ``reindex``
    after every turn instead, as an agent that searches every turn (each new
    turn's vectors, and the turns whose window it changed, embedded before the
    next turn is recorded)."""
    kind = type(load_embedder(spec))
    recorded = indexed = 0.0
    with (
        Memory.open(folder, session_max_turns=0, embedder=spec, **EXTRA) as memory,
        Counted(kind) as counted,
    ):
        for number, text in enumerate(texts):
            began = time.perf_counter()
            memory.record_turn(f"bench-{number // 500}", user=text, assistant=reply)
            recorded += time.perf_counter() - began
            if synced:
                began = time.perf_counter()
                memory.reindex()
                indexed += time.perf_counter() - began
        began = time.perf_counter()
        report = memory.reindex()  # synced: nothing left to do
        indexed += time.perf_counter() - began
    return {**figures(len(texts), recorded, indexed, counted), "vectors": report.vectors}


def batched(folder: Path, texts: list[str], reply: str, spec: str, size: int) -> dict[str, Any]:
    """``one_at_a_time``'s turns recorded ``size`` at a time with ``record_turns``."""
    kind = type(load_embedder(spec))
    turns = [
        {"session": f"bench-{number // 500}", "user": text, "assistant": reply}
        for number, text in enumerate(texts)
    ]
    with (
        Memory.open(folder, session_max_turns=0, embedder=spec, **EXTRA) as memory,
        Counted(kind) as counted,
    ):
        began = time.perf_counter()
        for start in range(0, len(turns), size):
            memory.record_turns(turns[start : start + size])
        recorded = time.perf_counter() - began
        began = time.perf_counter()
        report = memory.reindex()
        indexed = time.perf_counter() - began
    return {
        **figures(len(texts), recorded, indexed, counted),
        "batch": size,
        "vectors": report.vectors,
    }


def bulk(folder: Path, data: Path, limit: int, spec: str) -> tuple[dict[str, Any], list[str]]:
    """``record_conversation`` on the first conversations of ``data`` (up to ``limit`` turns)."""
    chosen, turns = [], 0
    for conversation in locomo.load(data):
        if turns >= limit:
            break
        chosen.append(conversation)
        turns += sum(len(session.turns) for session in conversation.sessions)
    recorded = indexed = 0.0
    with Counted(type(load_embedder(spec))) as counted:
        for number, conversation in enumerate(chosen):
            with Memory.open(
                folder / str(number), session_max_turns=0, embedder=spec, **EXTRA
            ) as memory:
                timing = _time_reindex(memory)
                began = time.perf_counter()
                record_conversation(memory, conversation)
                ended = time.perf_counter()
                recorded += timing["start"] - began
                indexed += ended - timing["start"]
    return figures(turns, recorded, indexed, counted), counted.texts


def _time_reindex(memory: Memory) -> dict[str, float]:
    """Make ``memory.reindex`` note when it starts (where recording ends)."""
    original, timing = memory.reindex, {"start": 0.0}

    def reindex(**kwargs: Any) -> Any:
        timing["start"] = time.perf_counter()
        return original(**kwargs)

    memory.reindex = reindex  # type: ignore[method-assign]
    return timing


def model_speed(texts: list[str], spec: str) -> dict[str, Any]:
    """The embedder ``spec`` alone on ``texts`` (after one warm-up batch)."""
    embedder = load_embedder(spec)
    embedder.embed(texts[:64])
    cpu, wall = time.process_time(), time.perf_counter()
    embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "embedder": embedder.name,
        "threads": getattr(embedder, "threads", 1),
        "batch_size": getattr(embedder, "batch_size", None),
        "texts": len(texts),
        "mean_chars": round(statistics.fmean(len(t) for t in texts), 1) if texts else 0,
        "texts_per_s": round(len(texts) / wall, 1),
        "cpu_ms_per_text": round(1000 * cpu / max(len(texts), 1), 3),
    }


def by_batch_size(texts: list[str], sizes: list[int], reps: int = 3) -> list[dict[str, Any]]:
    """CPU ms per text (median of ``reps``, interleaved so that load hits each alike)
    and texts/s of the embedder at each internal ``batch_size``."""
    model = os.environ.get("MEMSTRATA_EMBED_MODEL")
    if model is None:
        raise SystemExit("--batch-sizes: give the model to compare in MEMSTRATA_EMBED_MODEL")
    embedders = {size: MiniLMEmbedder(model, batch_size=size) for size in sizes}
    cpu: dict[int, list[float]] = {size: [] for size in sizes}
    rate: dict[int, list[float]] = {size: [] for size in sizes}
    for embedder in embedders.values():
        embedder.embed(texts[:64])
    for _ in range(reps):
        for size, embedder in embedders.items():
            began_cpu, began = time.process_time(), time.perf_counter()
            embedder.embed(texts)
            rate[size].append(len(texts) / (time.perf_counter() - began))
            cpu[size].append(1000 * (time.process_time() - began_cpu) / len(texts))
    return [
        {
            "batch_size": size,
            "cpu_ms_per_text": round(statistics.median(cpu[size]), 3),
            "texts_per_s": round(statistics.median(rate[size]), 1),
        }
        for size in sizes
    ]


def baseline_python() -> float:
    times = []
    for _ in range(3):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - began)
    return round(statistics.median(times), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--data", type=Path, default=DATA, help="a LoCoMo JSON file")
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--reply", default="I see.", help="the assistant text of each turn")
    parser.add_argument(
        "--batch-sizes",
        default="",
        help="internal batch sizes to compare on the embedded texts (a model given by "
        "MEMSTRATA_EMBED_MODEL only: the shipped one runs one text at a time)",
    )
    parser.add_argument("--embedder", choices=("minilm", "static"), default="minilm")
    parser.add_argument("--batch", type=int, default=100, help="turns per record_turns call")
    parser.add_argument(
        "--context-vectors",
        type=float,
        default=None,
        help="the context_vectors setting (0: each turn embedded alone; default: the shipped one)",
    )
    parser.add_argument(
        "--synced",
        action="store_true",
        help="also time the turns one at a time with the index synced after each",
    )
    args = parser.parse_args()
    if args.data != DATA and not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    data = args.data if args.data.is_file() else None
    if data is None:
        print(f"note: {DATA} is not there: templated chat lines instead", file=sys.stderr)
    report: dict[str, Any] = {
        "machine": machine(),
        "cpu_count": os.cpu_count(),
        "load_avg_before": [round(x, 2) for x in os.getloadavg()],
        "baseline_python_s": baseline_python(),
        "data": str(data) if data else "templated lines",
        "embedder": args.embedder,
    }
    if args.context_vectors is not None:
        EXTRA["context_vectors"] = args.context_vectors
    report["context_vectors"] = EXTRA.get("context_vectors", "shipped")
    load_embedder(args.embedder)  # loading the model is not ingest
    with tempfile.TemporaryDirectory() as tmp:
        texts = utterances(data, args.turns)
        report["one_at_a_time"] = one_at_a_time(
            Path(tmp) / "each", texts, args.reply, args.embedder
        )
        if args.synced:
            report["synced"] = one_at_a_time(
                Path(tmp) / "synced", texts, args.reply, args.embedder, synced=True
            )
        report["batched"] = batched(
            Path(tmp) / "batched", texts, args.reply, args.embedder, args.batch
        )
        embedded: list[str] = []
        if data is not None:
            report["bulk"], embedded = bulk(Path(tmp) / "bulk", data, args.turns, args.embedder)
    model = model_speed(embedded or texts, args.embedder)
    per_turn = (report.get("bulk") or report["one_at_a_time"])["texts_per_turn"]
    model["ceiling_turns_per_s"] = round(model["texts_per_s"] / max(per_turn, 1e-9), 1)
    sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]
    if sizes and args.embedder == "minilm":
        model["by_batch_size"] = by_batch_size((embedded or texts)[:600], sizes)
    report["model"] = model
    report["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    emit(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
