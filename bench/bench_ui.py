"""memstrata ui at scale: how long each page takes to answer on a workspace of
N facts (default 100,000), over HTTP to the real server (uvicorn, this
process), and how long ``memstrata ui`` takes to start.

The workspace: N facts (1 % of them corrected, 0.5 % forgotten), 20 sessions
of 50 turns (one compacted), a few notes; the index built before serving (as
``memstrata ui`` warms it in the background). Each page is asked
``--requests`` times after one warm-up request; the report gives p50, p99 and
the mean in milliseconds, and the first (cold) request apart. The Overview's
health check (``doctor``) runs in another process on the first Overview and
at most once a minute.

Run::

    .venv/bin/python bench/bench_ui.py --items 100000 --json bench/results/ui.json
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import uvicorn

from benchutil import emit, machine, percentiles
from memstrata import Memory
from memstrata.benchmarks.search_bench import facts
from memstrata.ui import warm
from memstrata.ui.app import create_app

BAR_MS = 300.0


def build(ws: Path, items: int, embedder: str) -> dict[str, Any]:
    rng = random.Random(11)
    began = time.perf_counter()
    with Memory.open(ws, embedder=embedder) as memory:
        categories = ("fact", "preference", "personal", "project", "decision")
        ids = [
            memory.remember(text, category=categories[n % 5], sync=False).id
            for n, text in enumerate(facts(items))
        ]
        memory.flush()
        for item_id in rng.sample(ids, items // 100):
            memory.supersede(item_id, f"corrected: {memory.get(item_id).text}")
        for item_id in rng.sample(ids, items // 200):
            if memory.get(item_id).is_live:
                memory.forget(item_id)
        for s in range(20):
            for n in range(50):
                memory.record_turn(
                    f"session-{s}",
                    user=f"turn {n} of session {s}: what about the budget for Q{n % 4 + 1}?",
                    assistant="Let me look.",
                    tool_calls=[{"name": "search", "arguments": {"q": "budget"}}],
                    tool_results=[{"name": "search", "content": "budget 2024: 1.2M"}],
                )
        memory.sessions.compact("session-0", keep=10)
        memory.notes.create("Budget", "See [[planning]].")
        memory.notes.create("Planning", "Quarterly planning notes.")
        memory.flush()
        memory.reindex(warm=True)
        sample = ids[len(ids) // 2]
    (ws / "memstrata.toml").write_text(f'[memory]\nembedder = "{embedder}"\n')
    return {"build_seconds": round(time.perf_counter() - began, 1), "sample_id": sample}


def ask(port: int, path: str) -> tuple[int, float, str]:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read().decode("utf-8", "replace")
    conn.close()
    return response.status, (time.perf_counter() - began) * 1000, body


def pages(sample: str) -> dict[str, str]:
    return {
        "overview": "/",
        "facts": "/facts",
        "facts_filtered": "/facts?" + urlencode({"category": "preference", "q": "budget"}),
        "facts_page_1000": "/facts?page=1000",
        "facts_superseded": "/facts?validity=superseded",
        "fact_history": f"/facts/{sample}",
        "search": "/search?" + urlencode({"q": "who leads the billing team"}),
        "sessions": "/sessions",
        "session": "/sessions/session-0",
        "layers": "/layers",
        "build_context": "/layers?" + urlencode({"prompt": "the budget for Q3", "budget": 2000}),
        "file_memory_md": "/file?path=MEMORY.md&lines=50000-50000",
    }


def measure(memory: Memory, sample: str, requests: int) -> dict[str, Any]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(memory), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    report: dict[str, Any] = {}
    try:
        began = time.perf_counter()
        while "checking…" in ask(port, "/")[2]:  # the first Overview starts doctor: let it end
            time.sleep(0.2)
        report["doctor_seconds"] = round(time.perf_counter() - began, 1)
        for name, path in pages(sample).items():
            status, cold, body = ask(port, path)
            if status != 200:
                raise SystemExit(f"{name}: HTTP {status}: {body[:300]}")
            times = [ask(port, path)[1] for _ in range(requests)]
            report[name] = {"first_ms": round(cold, 1), **percentiles(times)}
        report["correct_then_overview"] = write_then_read(port, memory, sample)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
    return report


def write_then_read(port: int, memory: Memory, sample: str) -> dict[str, float]:
    """A correction through the UI (POST, confirmed) and the next Overview."""
    live = memory.list(limit=1)[0]
    _, _, page = ask(port, f"/facts/{live.id}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    text = f"a corrected fact {time.time_ns()}"
    form = urlencode({"csrf": csrf.group(1), "text": text, "confirmed": "1"})
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(
        "POST",
        f"/facts/{live.id}/correct",
        body=form,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 303, response.status
    posted = (time.perf_counter() - began) * 1000
    _, overview, _ = ask(port, "/")
    return {"post_ms": round(posted, 1), "overview_after_ms": round(overview, 1)}


def startup(ws: Path) -> dict[str, float]:
    """Seconds from ``memstrata ui`` starting to its first answer (the "opening"
    page while the workspace loads) and to its first page with data."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    began = time.perf_counter()
    command = [sys.executable, "-m", "memstrata", "ui", "-w", str(ws), "--no-open"]
    proc = subprocess.Popen(
        [*command, "--port", str(port)],
        env={**os.environ, "MEMSTRATA_HOME": str(ws)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    found: dict[str, float] = {}
    try:
        while "ready_seconds" not in found:
            try:
                status, _, _ = ask(port, "/sessions")
                found.setdefault("answers_seconds", round(time.perf_counter() - began, 3))
                if status == 200:
                    found["ready_seconds"] = round(time.perf_counter() - began, 3)
            except OSError:
                pass
            time.sleep(0.02)
            if proc.poll() is not None:
                raise SystemExit("memstrata ui exited")
        return found
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--embedder", choices=("minilm", "hash", "none"), default="minilm")
    parser.add_argument("--keep", type=Path, default=None, help="build here and keep it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = args.keep or Path(tmp) / "ws"
        if (ws / "MEMORY.md").exists():  # --keep: built by an earlier run
            with Memory.open(ws) as memory:
                live = memory.list()
                built = {"build_seconds": None, "sample_id": live[len(live) // 2].id}
        else:
            built = build(ws, args.items, args.embedder)
        with Memory.open(ws, embedder=args.embedder) as memory:
            warm(memory)  # as `memstrata ui` does on a thread once the workspace is open
            timings = measure(memory, built["sample_id"], args.requests)
        started = startup(ws)
    slowest = max(v["p99"] for v in timings.values() if isinstance(v, dict) and "p99" in v)
    slowest_p50 = max(v["p50"] for v in timings.values() if isinstance(v, dict) and "p50" in v)
    report = {
        "machine": machine(),
        "items": args.items,
        "embedder": args.embedder,
        "build_seconds": built["build_seconds"],
        "startup": started,
        "pages_ms": timings,
        "slowest_p50_ms": slowest_p50,
        "slowest_p99_ms": slowest,
        "bar_ms": BAR_MS,
    }
    emit(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
