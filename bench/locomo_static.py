"""``memstrata bench locomo --cv`` for static tables not (yet) shipped.

Each ``--table`` (a file of ``bench/distill_static.py``) is loaded as a
``StaticEmbedder`` and run through the same leave-one-conversation-out
cross-validation as ``memstrata bench locomo --cv --embedder static``
(``memstrata.benchmarks.locomo_cv``): the figures without a floor, the
cross-validated ones, each fold's floor. For choosing among distillation
variants; the shipped table is measured with the CLI command itself.

Run::

    .venv/bin/python bench/locomo_static.py --data ../shared/data/locomo/locomo_dev.json \\
        --table /tmp/static/s128.bin --table /tmp/static/s256.bin --json out.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine
from memstrata.benchmarks import locomo, locomo_cv
from memstrata.embed.static import StaticEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--table", type=Path, action="append", required=True)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    conversations = locomo.load(args.data)
    runs: dict[str, Any] = {}
    for table in args.table:
        embedder = StaticEmbedder(table)
        started = time.perf_counter()
        # collect() takes an embedder spec; Memory.open also takes an object.
        found = locomo_cv.cross_validate(locomo_cv.collect(conversations, embedder))  # type: ignore[arg-type]
        found["seconds"] = round(time.perf_counter() - started, 1)
        runs[str(table)] = {"embedder": embedder.name, **found}
    emit({"machine": machine(), "runs": runs}, args.json)


if __name__ == "__main__":
    main()
