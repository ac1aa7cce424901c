"""``memstrata mcp``'s start-up (issue 18): the server answers ``initialize``
and lists its tools before its memory is open; the memory opens in a
background thread and every call waits for it; an open that fails makes each
call an error result and is reported (the command says it in one line and
exits 1)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client  # noqa: E402

from memstrata import Memory, NotFound  # noqa: E402
from memstrata.mcp_server import _Served, build_server  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _served(opener: Any, failed: Any = None) -> _Served:
    return _Served(opener, "main", {}, watch=False, failed=failed)


def test_initialize_and_the_tool_list_do_not_wait_for_the_memory(tmp_path: Path) -> None:
    import anyio

    gate, opened = threading.Event(), []

    def opener() -> Memory:
        gate.wait(30)
        opened.append(True)
        return Memory.open(tmp_path / "ws", embedder="none")

    served = _served(opener)
    server = build_server(served.memory, served.run)
    served.start()

    async def go() -> tuple[int, bool, Any, str]:
        async with Client(server) as client:  # initialize: answered while the open waits
            tools = await client.list_tools()
            before = bool(opened)
            gate.set()
            wrote = await client.call_tool("memory_write", {"text": "Ada prefers green tea"})
            found = await client.read_resource("memstrata://MEMORY.md")
            return len(tools.tools), before, wrote, str(found.contents[0])

    try:
        count, before, wrote, memory_md = anyio.run(go)
    finally:
        gate.set()
        served.stop(exit_code=0)
    assert count >= 15 and not before
    assert not wrote.is_error and "Ada prefers green tea" in memory_md
    with Memory.open(tmp_path / "ws", embedder="none") as memory:  # closed by the server
        assert [item.text for item in memory.list()] == ["Ada prefers green tea"]


def test_a_memory_that_does_not_open_makes_every_call_an_error(tmp_path: Path) -> None:
    import anyio

    reported: list[BaseException] = []

    def opener() -> Memory:
        raise NotFound("no workspace at /nowhere")

    served = _served(opener, reported.append)
    server = build_server(served.memory, served.run)  # opened at the first call

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("memory_status", {})

    try:
        result = anyio.run(go)
    finally:
        served.stop(exit_code=0)
    assert result.is_error and "no workspace at /nowhere" in str(result.content[0])
    assert [type(exc) for exc in reported] == [NotFound]


@pytest.mark.slow  # a subprocess
def test_mcp_on_a_workspace_that_does_not_open_says_it_in_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run(
        [sys.executable, "-c", "from memstrata.cli import main; main()", "init", "-w", str(ws)],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
    )
    (ws / "rules").mkdir(exist_ok=True)
    (ws / "rules" / "bad.toml").write_text("this is = = not toml")  # refused by Memory.open
    done = subprocess.run(
        [sys.executable, "-c", "from memstrata.cli import main; main()", "mcp", "-w", str(ws)],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Error: capture rules ") and "not valid TOML" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
