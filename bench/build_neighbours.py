"""Build the list of nearest words that BM25's query expansion reads
(``index.expand``): for every whole word of the static table, the indexed
forms of its nearest words, one product per word as the search once made
it. Deterministic; writes ``src/memstrata/embed/data/static-minilm-128-neighbours.txt.gz``
(gzip with no name or time in its header, so the bytes are the same each run).

Run::

    .venv/bin/python bench/build_neighbours.py
    git diff --exit-code src/memstrata/embed/data/static-minilm-128-neighbours.txt.gz
"""

from __future__ import annotations

import gzip
import io
import time
from pathlib import Path

from memstrata.index import expand

OUT = Path(__file__).resolve().parents[1] / "src/memstrata/embed/data" / expand.NEIGHBOURS_FILE


def main() -> None:
    started = time.perf_counter()
    found = expand.compute()
    text = "".join(f"{word}\t{' '.join(terms)}\n" for word, terms in sorted(found.items()))
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(text.encode("utf-8"))
    OUT.write_bytes(buffer.getvalue())
    seconds = time.perf_counter() - started
    print(f"{len(found)} words, {OUT.stat().st_size} bytes, {seconds:.1f} s -> {OUT}")


if __name__ == "__main__":
    main()
