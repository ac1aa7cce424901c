"""Start-up of the ``memstrata`` command line and the MCP server (issue 18),
each measured as a fresh process, side by side with ``python -c pass`` in the
same run (the machine's floor), with the load average before and after.

* ``version``: ``memstrata --version``;
* ``observe``: ``memstrata observe TEXT`` on a small workspace (a shell
  hook's per-message call; the rule cache warm);
* ``search``: ``memstrata search QUERY`` on a 6-fact workspace, the local
  embedding model's load included (``--embedder minilm``, the default);
* ``mcp_initialize``: spawn ``memstrata mcp`` (stdio) and complete the
  official client's ``initialize``.

Each figure is the median of ``--runs`` runs after one warm-up run. Run::

    .venv/bin/python bench/bench_cli.py --json bench/results/cli.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchutil import emit, machine

SRC = str(Path(__file__).resolve().parents[1] / "src")
CLI = [sys.executable, "-c", "from memstrata.cli import main; main()"]
GOALS_MS = {"version": 120, "observe": 250, "search": 400, "mcp_initialize": 500}
FACTS = [
    "The staging database listens on port 5433",
    "Alice leads the billing team",
    "We deploy on Fridays after the standup",
    "The user prefers answers in short bullet points",
    "The search service runs on search-1.internal",
    "Budget for 2024 is 40k EUR",
]


def _env(home: Path, src: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PYTHONPATH": src, "MEMSTRATA_HOME": str(home)})
    return env


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - started


def _median_ms(samples: list[float]) -> dict[str, Any]:
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "min_ms": round(min(samples) * 1000, 1),
        "runs": len(samples),
    }


def _series(argv: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    _timed(argv, env)  # warm-up: the page cache, the rule cache
    return _median_ms([_timed(argv, env) for _ in range(runs)])


async def _initialize(env: dict[str, str]) -> float:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp"], env=env)
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return time.perf_counter() - started


def _mcp_series(env: dict[str, str], runs: int) -> dict[str, Any]:
    import anyio

    anyio.run(_initialize, env)
    return _median_ms([anyio.run(_initialize, env) for _ in range(runs)])


def run(runs: int, embedder: str, src: str = SRC) -> dict[str, Any]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        home = Path(tmp) / "ws"
        env = _env(home, src)
        subprocess.run([*CLI, "init"], env=env, check=True, stdout=subprocess.DEVNULL)
        (home / "memstrata.toml").write_text(f'[memory]\nembedder = "{embedder}"\n')
        for fact in FACTS:
            subprocess.run([*CLI, "remember", fact], env=env, check=True, stdout=subprocess.DEVNULL)
        figures = {
            "python_c_pass": _series([sys.executable, "-c", "pass"], env, runs),
            "version": _series([*CLI, "--version"], env, runs),
            "observe": _series(
                [*CLI, "observe", "-s", "bench", "I prefer tea, not coffee."], env, runs
            ),
            "search": _series([*CLI, "search", "which port does staging use"], env, runs),
            "mcp_initialize": _mcp_series(env, runs),
        }
    floor = figures["python_c_pass"]["median_ms"]
    for name, goal in GOALS_MS.items():
        figure = figures[name]
        figure["goal_ms"] = goal
        figure["meets_goal"] = figure["median_ms"] <= goal
        figure["above_python_ms"] = round(figure["median_ms"] - floor, 1)
    return {
        "bench": "cli_startup",
        "machine": machine(),
        "cpus": os.cpu_count(),
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "embedder": embedder,
        "src": src,
        "figures": figures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per figure")
    parser.add_argument(
        "--embedder", default="minilm", help="the workspace's embedder (minilm, static, hash, none)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    parser.add_argument(
        "--src", default=SRC, help="the source tree to time (another checkout's src, to compare)"
    )
    args = parser.parse_args()
    emit(run(args.runs, args.embedder, args.src), args.json)


if __name__ == "__main__":
    main()
