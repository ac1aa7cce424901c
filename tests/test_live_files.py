"""Live files (``Memory.watch_files``): a running process takes in hand edits
of MEMORY.md and the other searchable files without a restart, through the
checks of open; the watcher thread ends with the ``Memory``."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstrata import Memory

TIMEOUT = 30.0  # generous: an edit is normally taken in within a fraction of a second


def wait_for(condition: Callable[[], object], timeout: float = TIMEOUT) -> object:
    """Poll ``condition`` until it is truthy (its value) or the timeout fails the test."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, "not seen before the timeout"
        time.sleep(0.02)


def watchers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memstrata-live-files" and t.is_alive()]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "ws", embedder="hash") as opened:
        opened.remember("The staging database listens on port 5433")
        opened.flush()
        yield opened


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(text)


def _found(memory: Memory, query: str, needle: str) -> bool:
    return any(needle in hit.snippet for hit in memory.search(query, k=5))


def test_a_hand_edit_of_memory_md_is_searchable_while_open(memory: Memory) -> None:
    live = memory.watch_files(interval=0.05)
    assert live is not None and memory.watch_files() is live  # idempotent
    assert _found(memory, "staging port", "5433")
    _append(memory.workspace.path / "MEMORY.md", "- The canary deploy runs at 04:00 UTC\n")
    wait_for(lambda: _found(memory, "canary deploy", "04:00"))
    assert any("04:00" in item.text for item in memory.list())


def test_a_hand_edit_of_another_searchable_file_is_searchable(memory: Memory) -> None:
    memory.watch_files(interval=0.05)
    assert not _found(memory, "quokka", "quokka")  # the index is open and synced
    _append(memory.workspace.path / "semantic" / "facts.md", "\n- The team mascot is a quokka\n")
    wait_for(lambda: _found(memory, "team mascot", "quokka"))


def test_without_watching_an_edit_waits_for_the_rescan(memory: Memory) -> None:
    assert _found(memory, "staging port", "5433")
    _append(memory.workspace.path / "MEMORY.md", "- The canary deploy runs at 04:00 UTC\n")
    assert not _found(memory, "canary deploy", "04:00")  # the behaviour watching fixes


def test_a_damaging_save_is_set_aside_as_at_open(memory: Memory) -> None:
    for n in range(12):
        memory.remember(f"Fact number {n} about the build cache")
    memory.flush()
    live = memory.watch_files(interval=0.05)
    assert live is not None
    md = memory.workspace.path / "MEMORY.md"
    md.write_text("# Memory\n", encoding="utf-8")  # every fact gone at once
    wait_for(lambda: any("damaged" in notice for notice in memory.status().notices))
    assert len(memory.list()) == 13  # nothing deleted
    wait_for(lambda: "Fact number 3" in md.read_text(encoding="utf-8"))  # rendered again
    assert list((memory.workspace.path / ".memstrata" / "quarantine").iterdir())


def test_close_ends_the_watcher(tmp_path: Path) -> None:
    before = len(watchers())
    memory = Memory.open(tmp_path / "ws", embedder="hash")
    live = memory.watch_files(interval=0.05)
    assert live is not None and live.running and len(watchers()) == before + 1
    wait_for(lambda: live.polls >= 2)
    memory.close()
    assert not live.running and len(watchers()) == before


def test_a_read_only_memory_starts_no_watcher(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="hash"):
        pass
    with Memory.open(tmp_path / "ws", read_only=True) as memory:
        assert memory.watch_files() is None
        assert watchers() == []


# -- under a running MCP server (the official client, stdio) --------------------------

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")


async def _edit_under_server(ws: Path) -> tuple[float, str]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    import memstrata

    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "-w", str(ws), "mcp"],
        env={
            "MEMSTRATA_HOME": str(ws),
            "PYTHONPATH": str(Path(memstrata.__file__).parents[1]),
            "MEMSTRATA_CACHE_DIR": os.environ.get("MEMSTRATA_CACHE_DIR", ""),  # (conftest's)
        },
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        search = next(tool.name for tool in tools.tools if "search" in tool.name)

        async def hits(query: str) -> str:
            result = await session.call_tool(search, {"query": query, "k": 5})
            return "".join(getattr(part, "text", "") for part in result.content) + str(
                getattr(result, "structuredContent", "") or ""
            )

        assert "5433" in await hits("staging port")  # the server has searched once
        _append(ws / "MEMORY.md", "- The canary deploy runs at 04:00 UTC\n")
        edited = time.monotonic()
        deadline = edited + TIMEOUT
        while "04:00" not in (found := await hits("canary deploy")):
            assert time.monotonic() < deadline, "the edit was not taken in"
            time.sleep(0.05)
        return time.monotonic() - edited, found


@pytest.mark.slow  # a server subprocess
def test_a_hand_edit_under_a_running_mcp_server_is_found_by_search(tmp_path: Path) -> None:
    import anyio

    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="hash") as memory:
        memory.remember("The staging database listens on port 5433")
    (ws / "memstrata.toml").write_text('[memory]\nembedder = "hash"\n')
    seconds, found = anyio.run(_edit_under_server, ws)
    assert "04:00" in found
    print(f"hand edit found by search {seconds:.2f} s after the save")
