"""Index write time and file size for N chunks (issue 14: is the FTS5 table worth its cost?).

Writes ``--chunks`` fact-sized chunks (``memstrata bench search``'s templated
facts) into a fresh index file, ``--per-file`` chunks per ``Index.replace``
(one transaction each, as a sync writes a file), then reports the write time,
chunks per second and the file's size (database plus WAL, after a checkpoint).
Run it on two commits to compare them.

Run::

    .venv/bin/python bench/bench_index_write.py --chunks 20000 --json bench/results/index_write.json
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine
from memstrata.benchmarks.search_bench import facts
from memstrata.index.chunks import Chunk
from memstrata.index.sqlite import FileState, Index


def measure(folder: Path, count: int, per_file: int) -> dict[str, Any]:
    texts = facts(count)
    path = folder / "index.sqlite"
    index = Index(path)
    began = time.perf_counter()
    for start in range(0, count, per_file):
        name = f"semantic/f{start // per_file}.md"
        chunks = [
            Chunk(name, "semantic", n + 1, n + 1, text, title="Facts")
            for n, text in enumerate(texts[start : start + per_file])
        ]
        index.replace(name, chunks, FileState(1, 1, f"{start:064d}"))
    seconds = time.perf_counter() - began
    index.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    db.close()
    size = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("index.sqlite"))
    return {
        "chunks": count,
        "per_file": per_file,
        "write_s": round(seconds, 3),
        "chunks_per_s": round(count / seconds),
        "file_bytes": size,
        "fts5": "chunks_fts" in tables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--per-file", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(Path(tmp), args.chunks, args.per_file)
    emit({"machine": machine(), **result}, args.json)


if __name__ == "__main__":
    sys.exit(main())
