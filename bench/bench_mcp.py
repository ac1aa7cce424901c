"""MCP tool round trips over stdio with the official client: ``memory_search``
on a workspace of N chunks, and ``memory_write``.

Run::

    .venv/bin/python bench/bench_mcp.py --items 10000 --json bench/results/mcp.json
    .venv/bin/python bench/bench_mcp.py --items 10000 --embedders static \\
        --json bench/results/mcp_static.json

``--server-src OLD/src`` runs the server from another checkout (an A/B:
alternate runs with and without it).

Beside them, the SDK's own floor on the same connection: a ``ping`` and a
``memory_status`` call (a tool with a small result), each ``--calls`` times.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from benchutil import emit, machine, percentiles
from memstrata import Memory
from memstrata.benchmarks.search_bench import facts

QUERIES = ["Who leads the billing team?", "Which port does search staging use?", "budget 2024"]


async def _round_trips(ws: Path, calls: int, server_src: Path | None = None) -> dict[str, Any]:
    env = {"MEMSTRATA_HOME": str(ws)}
    if server_src is not None:  # the server from another checkout (its first search
        env["PYTHONPATH"] = str(server_src)  # embeds the workspace again if its model differs)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "mcp", "-w", str(ws)],
        env=env,
    )
    rng = random.Random(5)
    search, write, ping, status = [], [], [], []
    async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
        await session.initialize()
        await session.call_tool("memory_search", {"query": "warm up"})
        for _ in range(calls):  # the SDK's own floor: a ping, and a tool with a small result
            began = time.perf_counter()
            await session.send_ping()
            ping.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            await session.call_tool("memory_status", {})
            status.append((time.perf_counter() - began) * 1000)
        for _ in range(calls):
            began = time.perf_counter()
            await session.call_tool("memory_search", {"query": rng.choice(QUERIES), "k": 8})
            search.append((time.perf_counter() - began) * 1000)
        for n in range(calls):
            began = time.perf_counter()
            await session.call_tool("memory_write", {"text": f"bench note {n}"})
            write.append((time.perf_counter() - began) * 1000)
    return {
        "memory_search_ms": percentiles(search),
        "memory_write_ms": percentiles(write),
        "ping_ms": percentiles(ping),
        "memory_status_ms": percentiles(status),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--embedders",
        default="minilm,none",
        help="comma-separated embedders, each measured on its own workspace (minilm, static, none)",
    )
    parser.add_argument(
        "--server-src",
        type=Path,
        help="run the server from this src folder (another checkout), for an A/B",
    )
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": machine(), "items": args.items, "transport": "stdio"}
    if args.server_src is not None:
        report["server_src"] = str(args.server_src)
    for embedder in [name.strip() for name in args.embedders.split(",") if name.strip()]:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "ws"
            with Memory.open(ws, embedder=embedder) as memory:
                for text in facts(args.items):
                    memory.remember(text, category="fact", sync=False)
                memory.flush()
                chunks = memory.reindex().chunks
            (ws / "memstrata.toml").write_text(f'[memory]\nembedder = "{embedder}"\n')
            trips = anyio.run(_round_trips, ws, args.calls, args.server_src)
            report[embedder] = {"chunks": chunks, **trips}
    emit(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
