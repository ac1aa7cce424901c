"""The MCP server driven by the official SDK's own client, over stdio (issue 8)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from memstrata import Memory  # noqa: E402
from memstrata.tools import anthropic_tools, dispatch, openai_tools  # noqa: E402

HOSTILE = [
    "../../etc/passwd",
    "/etc/passwd",
    "memory/../../../etc/hostname",
    "..\\..\\x",
    "MEMORY.md/../../secret",
    "memory/%2e%2e/%2e%2e/etc/passwd",
]


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "".join(getattr(part, "text", "") for part in content)


async def _session_run(ws: Path) -> dict[str, object]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "mcp", "-w", str(ws)],
        env={"MEMSTRATA_HOME": str(ws)},
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
        out["search"] = json.loads(_text(found))
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
