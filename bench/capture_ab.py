"""Capture speed, two source trees interleaved: ``scan`` p50 per 200-character message.

Each ``--src`` (a ``src`` folder holding ``memstrata``) runs in a worker
process of its own; the driver asks them in turn for one round (every message
scanned once, timed alone with perf_counter_ns) so that both see the same
machine load, and reports per tree the median over rounds of each round's
p50 (and of its p90 and p99), and a baseline (``sum(range(1000))``, timed the same
way) as a load gauge; ``--rules-only`` times ``scan(text, learned=False)``.
The messages are ``bench_capture.py``'s: the corpus of this tree plus the
LoCoMo turns when the file is there, joined and cut to 200 characters.

Run (main's tree against this one)::

    .venv/bin/python bench/capture_ab.py --src /work/main/src src --rounds 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_capture import LOCOMO, corpus_texts, locomo_texts, to_200
from benchutil import emit, machine

WORKER = r"""
import json, statistics, sys, time
from memstrata.capture.scan import scan
texts = json.loads(sys.stdin.readline())
learned = sys.argv[1] == "on"
for text in texts[:500]:
    scan(text, learned=learned)
clock = time.perf_counter_ns
for line in sys.stdin:
    costs, base = [], []
    for text in texts:
        start = clock()
        scan(text, learned=learned)
        costs.append((clock() - start) / 1000)
    for _ in range(200):
        start = clock()
        sum(range(1000))
        base.append((clock() - start) / 1000)
    costs.sort()
    p99 = costs[min(len(costs) - 1, int(len(costs) * 0.99))]
    p90 = costs[int(len(costs) * 0.9)]
    print(json.dumps([statistics.median(costs), statistics.median(base), p99, p90]), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", nargs="+", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--rules-only", action="store_true", help="scan(text, learned=False): no learned scorer"
    )
    args = parser.parse_args()
    base = corpus_texts() + locomo_texts(LOCOMO)
    texts = to_200(base, args.messages)
    workers = []
    for src in args.src:
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, "off" if args.rules_only else "on"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(src.resolve()), "PATH": "/usr/bin:/bin"},
        )
        assert worker.stdin is not None
        worker.stdin.write(json.dumps(texts) + "\n")
        worker.stdin.flush()
        workers.append(worker)
    rounds: list[list[list[float]]] = [[] for _ in workers]
    for _ in range(args.rounds):
        for index, worker in enumerate(workers):
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
            rounds[index].append(json.loads(worker.stdout.readline()))
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    report: dict[str, Any] = {
        "machine": machine(),
        "messages": len(texts),
        "rounds": args.rounds,
        "learned": not args.rules_only,
        "load_average": [round(x, 2) for x in __import__("os").getloadavg()],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for src, got in zip(args.src, rounds, strict=True):
        report[str(src)] = {
            "scan_200_p50_us": round(statistics.median(r[0] for r in got), 2),
            "best_round_p50_us": round(min(r[0] for r in got), 2),
            "scan_200_p90_us": round(statistics.median(r[3] for r in got), 2),
            "scan_200_p99_us": round(statistics.median(r[2] for r in got), 2),
            "baseline_us": round(statistics.median(r[1] for r in got), 2),
        }
    emit(report, args.json)


if __name__ == "__main__":
    main()
