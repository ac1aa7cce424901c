"""Where a scan's time goes: the learned step's parts, each measured inside ``scan``.

The scorer costs about twice as much inside a scan as alone (its dicts and
ints leave the caches while the rules run), so its parts are measured as
what they add to a whole ``scan``: the learned step (``scan._learned``) is
replaced in turn by

* ``rules``: nothing (``scan(text, learned=False)`` but for the call);
* ``tokens``: the scorer's tokens of the message;
* ``token_rows``: the tokens and the sum of their packed vectors;
* ``logits``: ``Model.logits`` with the rules' verdicts (tokens, pair rows,
  the sums unpacked);
* ``learned``: the real step (``additions``, then the vetoes of what it adds).

Each variant scans every message once per round; the rounds go round-robin
so that all see the same machine load; per variant, the median over rounds
of each round's p50 (and the best round). The messages are
``bench_capture.py``'s (the corpus plus the LoCoMo turns, joined and cut to
200 characters).

Run::

    PYTHONPATH=src:bench .venv/bin/python bench/capture_costs.py --rounds 9

(``PYTHONPATH=OTHER/src:bench`` measures another tree with this script.)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench_capture import LOCOMO, corpus_texts, locomo_texts, to_200
from memstrata.capture import scan as scan_module
from memstrata.capture import scorer


def _text(message: Any) -> str:
    """The message's text: ``_learned`` is handed the scan's message, or (in
    trees before 2026-11-28's fourth speed pass) the text itself."""
    return message if isinstance(message, str) else str(message.text)


def variants() -> dict[str, Callable[..., None]]:
    model = scorer.load_model()
    assert model is not None, "no scorer weights"
    packed = model.packed.__getitem__

    def rules(found: Any, message: Any, *rest: Any) -> None:
        return None

    def tokens(found: Any, message: Any, *rest: Any) -> None:
        scorer.tokens(_text(message))

    def token_rows(found: Any, message: Any, *rest: Any) -> None:
        sum(map(packed, scorer.tokens(_text(message))))

    def logits(found: Any, message: Any, *rest: Any) -> None:
        model.logits(_text(message), found)

    return {
        "rules": rules,
        "tokens": tokens,
        "token_rows": token_rows,
        "logits": logits,
        "learned": scan_module._learned,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    texts = to_200(corpus_texts() + locomo_texts(LOCOMO), args.messages)
    steps = variants()
    real = scan_module._learned
    clock = time.perf_counter_ns
    rounds: dict[str, list[float]] = {name: [] for name in steps}
    try:
        for text in texts:  # warm: rules, finders, caches
            scan_module.scan(text)
        for _ in range(args.rounds):
            for name, step in steps.items():
                scan_module._learned = step
                costs = []
                for text in texts:
                    start = clock()
                    scan_module.scan(text)
                    costs.append((clock() - start) / 1000)
                rounds[name].append(statistics.median(costs))
    finally:
        scan_module._learned = real
    before = None
    for name, got in rounds.items():
        p50 = statistics.median(got)
        added = "" if before is None else f"  (+{p50 - before:.1f})"
        print(f"{name:11s} p50 {p50:6.1f} µs  best round {min(got):6.1f} µs{added}")
        before = p50


if __name__ == "__main__":
    main()
