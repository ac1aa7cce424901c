"""The MCP server driven by the official SDK's own client, over stdio (issue 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from memstrata import Memory  # noqa: E402
from memstrata.tools import anthropic_tools, dispatch, openai_tools  # noqa: E402
from test_access import ISSUE_ATTACKS  # noqa: E402

HOSTILE = ISSUE_ATTACKS  # the issue's list of paths that must be refused


def server_env(home: Path) -> dict[str, str]:
    """The environment of a stdio server: the SDK passes only a few variables
    on, so name the source tree under test (not whatever the venv installed)."""
    import os

    import memstrata

    return {
        "MEMSTRATA_HOME": str(home),
        "PYTHONPATH": str(Path(memstrata.__file__).parents[1]),
        "MEMSTRATA_CACHE_DIR": os.environ.get("MEMSTRATA_CACHE_DIR", ""),  # (conftest's)
    }


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "".join(getattr(part, "text", "") for part in content)


async def _session_run(ws: Path) -> dict[str, object]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "mcp", "-w", str(ws)],
        env=server_env(ws),
    )
    out: dict[str, object] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        out["tools"] = sorted(tool.name for tool in tools.tools)
        wrote = await session.call_tool(
            "memory_write", {"text": "The staging database listens on port 5433"}
        )
        out["write"] = json.loads(_text(wrote))
        found = await session.call_tool("memory_search", {"query": "staging port", "k": 3})
        out["search"] = json.loads(_text(found))["hits"]
        got = await session.call_tool("memory_get", {"path": "MEMORY.md"})
        out["get"] = json.loads(_text(got))
        refused = []
        for path in HOSTILE:
            result = await session.call_tool("memory_get", {"path": path})
            refused.append(_text(result))
        out["refused"] = refused
        resources = await session.list_resources()
        out["resources"] = sorted(str(r.uri) for r in resources.resources)
    return out


@pytest.mark.slow
def test_the_official_client_lists_writes_searches_gets_and_is_refused(tmp_path: Path) -> None:
    import anyio

    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="hash"):
        pass
    (ws / "memstrata.toml").write_text('[memory]\nembedder = "hash"\n')
    result = anyio.run(_session_run, ws)
    assert {"memory_search", "memory_get", "memory_write", "memory_forget", "memory_status"} <= set(
        result["tools"]  # type: ignore[arg-type]
    )
    assert result["write"]["source"] == "agent"  # type: ignore[index]
    hits = result["search"]
    assert hits and "5433" in hits[0]["snippet"]  # type: ignore[index]
    assert "5433" in result["get"]["text"]  # type: ignore[index]
    for path, text in zip(HOSTILE, result["refused"], strict=True):  # type: ignore[arg-type]
        assert text.startswith("Error:"), (path, text)
        assert "root:" not in text and "localhost" not in text, (path, text)
    assert "memstrata://core/USER.md" in result["resources"]  # type: ignore[operator]


REFUSED_CALLS: list[tuple[str, dict[str, object]]] = [
    ("memory_get", {"path": "../../etc/passwd"}),  # the path guard
    ("memory_get", {"path": "/etc/passwd"}),
    ("memory_get", {"path": "memory/never-written.md"}),  # not found
    ("memory_search", {"query": ""}),  # a bad argument, refused by memstrata
    ("memory_search", {"query": "port", "k": 0}),
    ("memory_get", {"path": "MEMORY.md", "lines": 10_000}),
    ("memory_search", {"query": "port", "k": "many"}),  # refused by the SDK's schema check
    ("memory_forget", {"id": "no-such-id"}),  # not found
]


async def _refusal_run(ws: Path) -> list[tuple[bool, str]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "mcp", "-w", str(ws)],
        env=server_env(ws),
    )
    out = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, arguments in [("memory_status", {}), *REFUSED_CALLS]:
            result = await session.call_tool(name, arguments)
            out.append((result.is_error, _text(result)))
    return out


@pytest.mark.slow
def test_every_refusal_is_an_mcp_error_result(tmp_path: Path) -> None:
    import anyio

    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none"):
        pass
    (ws / "memstrata.toml").write_text('[memory]\nembedder = "none"\n')
    (ok, status), *refused = anyio.run(_refusal_run, ws)
    assert ok is False and "index" in json.loads(status)
    for (name, arguments), (is_error, text) in zip(REFUSED_CALLS, refused, strict=True):
        assert is_error is True, (name, arguments, text)
        assert text.strip() and "Traceback" not in text, (name, arguments, text)
        assert "root:" not in text, (name, arguments, text)


def test_tool_schemas_and_dispatch(tmp_path: Path) -> None:
    names = {tool["function"]["name"] for tool in openai_tools()}
    assert names == {tool["name"] for tool in anthropic_tools()}
    assert all(tool["input_schema"]["type"] == "object" for tool in anthropic_tools())
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        written = json.loads(dispatch(memory, "memory_write", '{"text": "Tea over coffee"}'))
        assert written["source"] == "agent"
        assert dispatch(memory, "memory_write", "{not json").startswith("Error:")
        assert dispatch(memory, "nope", {}).startswith("Error: unknown tool")
        assert dispatch(memory, "memory_search", {"query": ""}).startswith("Error:")
        assert dispatch(memory, "memory_get", {"path": "/etc/passwd"}).startswith("Error:")
        forgotten = json.loads(dispatch(memory, "memory_forget", {"id": written["id"]}))
        assert forgotten["forgotten"] == written["id"]
        assert dispatch(memory, "memory_forget", {"id": written["id"]}).startswith("Error:")
        status = json.loads(dispatch(memory, "memory_status", None))
        assert status["items"] == 0 and "index" in status


# -- streamable HTTP ----------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http(ws: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    import socket
    import time

    command = [
        sys.executable,
        "-c",
        "from memstrata.cli import main; main()",
        "mcp",
        "--http",
        "--port",
        str(port),
        "-w",
        str(ws),
        *extra,
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(err.decode())
        time.sleep(0.1)
    proc.kill()
    proc.communicate()
    raise AssertionError("the HTTP server did not start")


async def _writer(url: str, client_number: int, count: int, headers: dict[str, str]) -> int:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    done = 0
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for n in range(count):
            result = await session.call_tool(
                "memory_write", {"text": f"client {client_number} wrote note {n}"}
            )
            assert not _text(result).startswith("Error"), _text(result)
            done += 1
    return done


@pytest.mark.slow
def test_eight_http_clients_times_200_writes_are_all_there_after_restart(tmp_path: Path) -> None:
    import anyio

    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none"):
        pass
    port = _free_port()
    proc = _start_http(ws, port)
    url = f"http://127.0.0.1:{port}/mcp"
    counts: list[int] = []
    try:

        async def run_all() -> None:
            async with anyio.create_task_group() as group:
                for client_number in range(8):

                    async def one(number: int = client_number) -> None:
                        counts.append(await _writer(url, number, 200, {}))

                    group.start_soon(one)

        anyio.run(run_all)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert counts == [200] * 8
    with Memory.open(ws, embedder="none") as memory:
        texts = {item.text for item in memory.list()}
    expected = {f"client {c} wrote note {n}" for c in range(8) for n in range(200)}
    assert expected <= texts and len(texts) == 1600


@pytest.mark.slow
def test_http_beyond_loopback_needs_a_token_and_checks_it(tmp_path: Path) -> None:
    import httpx2

    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none"):
        pass
    refused = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memstrata.cli import main; main()",
            "mcp",
            "--http",
            "--host",
            "0.0.0.0",
            "-w",
            str(ws),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in __import__("os").environ.items() if k != "MEMSTRATA_MCP_TOKEN"},
        check=False,
    )
    assert refused.returncode == 1 and "bearer token" in refused.stderr
    port = _free_port()
    proc = _start_http(ws, port, "--token", "s3cret-token")
    try:
        bare = httpx2.post(f"http://127.0.0.1:{port}/mcp", json={})
        assert bare.status_code == 401
        import anyio

        done = anyio.run(
            _writer,
            f"http://127.0.0.1:{port}/mcp",
            0,
            1,
            {"Authorization": "Bearer s3cret-token"},
        )
        assert done == 1
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


async def _group_run(root: Path) -> list[str]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "mcp", "-w", str(root), "-g", "a"],
        env=server_env(root),
    )
    out = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for arguments in (
            {"query": "vault", "group": "b"},
            {"query": "vault"},
            {"query": "office hours"},
        ):
            out.append(_text(await session.call_tool("memory_search", arguments)))
    return out


@pytest.mark.slow
def test_a_group_server_reads_its_own_and_global_memory_only(tmp_path: Path) -> None:
    import anyio

    root = tmp_path / "root"
    for group, text in (("b", "The vault code is 4242"), ("global", "Office hours are 9 to 5")):
        with Memory.open(root, group, embedder="none") as memory:
            memory.remember(text)
    with Memory.open(root, "a", embedder="none"):
        pass
    for group in ("a", "b", "global"):
        (root / "groups" / group / "memstrata.toml").write_text('[memory]\nembedder = "none"\n')
    other, own, shared = anyio.run(_group_run, root)
    assert other.startswith("Error: group 'a' may not read group 'b'")
    assert "4242" not in own
    assert json.loads(shared)["hits"][0]["group"] == "global"
