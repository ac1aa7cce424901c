"""MemstrataMemoryTool in the real anthropic SDK: its typed memory-tool commands,
and its tool runner driving a conversation against a scripted Messages API
(an in-process HTTP transport: no network)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="needs memstrata[integrations]")

import anthropic  # noqa: E402
import httpx2  # noqa: E402
from anthropic.tools.memory import BetaAbstractMemoryTool  # noqa: E402

from memstrata import Memory  # noqa: E402
from memstrata.integrations.anthropic_memory import (  # noqa: E402
    MemstrataAsyncMemoryTool,
    MemstrataMemoryTool,
)

SECRET = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 3


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "ws", embedder="none") as opened:
        yield opened


def _message(number: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _tool_use(number: int, **command: Any) -> dict[str, Any]:
    return _message(
        number,
        [{"type": "tool_use", "id": f"toolu_{number}", "name": "memory", "input": command}],
        "tool_use",
    )


class ScriptedApi:
    """The Messages API as a script: each request gets the next reply, and is kept."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        return httpx2.Response(200, json=self.replies.pop(0))

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(self))
        )


def test_it_is_the_sdks_memory_tool(memory: Memory) -> None:
    tool = MemstrataMemoryTool(memory)
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"


def test_typed_commands_reach_the_workspace(memory: Memory, tmp_path: Path) -> None:
    tool = MemstrataMemoryTool(memory)
    created = tool.call(
        {"command": "create", "path": "/memories/notes/inbox/coffee.md", "file_text": "likes\n"}
    )
    assert created == "File created successfully at: /memories/notes/inbox/coffee.md"
    assert (tmp_path / "ws" / "notes" / "inbox" / "coffee.md").read_text() == "likes\n"
    tool.call(
        {
            "command": "str_replace",
            "path": "/memories/notes/inbox/coffee.md",
            "old_str": "likes",
            "new_str": "likes flat whites",
        }
    )
    tool.call(
        {
            "command": "insert",
            "path": "/memories/notes/inbox/coffee.md",
            "insert_line": 0,
            "insert_text": "# Coffee\n",
        }
    )
    shown = tool.call(
        {"command": "view", "path": "/memories/notes/inbox/coffee.md", "view_range": [1, 2]}
    )
    assert "# Coffee" in shown and "likes flat whites" in shown
    tool.call(
        {
            "command": "rename",
            "old_path": "/memories/notes/inbox/coffee.md",
            "new_path": "/memories/notes/inbox/drinks.md",
        }
    )
    assert tool.call({"command": "delete", "path": "/memories/notes/inbox/drinks.md"}) == (
        "Successfully deleted /memories/notes/inbox/drinks.md"
    )


def test_refusals_are_tool_errors(memory: Memory) -> None:
    tool = MemstrataMemoryTool(memory)
    with pytest.raises(anthropic.lib.tools.ToolError) as caught:
        tool.call({"command": "view", "path": "/memories/../../etc/passwd"})
    assert isinstance(caught.value.content, str) and caught.value.content.startswith("Error:")
    with pytest.raises(anthropic.lib.tools.ToolError):
        tool.clear_all_memory()


def test_the_sdk_tool_runner_drives_a_conversation(memory: Memory, tmp_path: Path) -> None:
    api = ScriptedApi(
        [
            _tool_use(1, command="view", path="/memories"),
            _tool_use(
                2,
                command="create",
                path="/memories/notes/inbox/user.md",
                file_text=f"Ana prefers tea. Her key: {SECRET}\n",
            ),
            _tool_use(3, command="view", path="/memories/MEMORY.md/../../secret"),
            _message(4, [{"type": "text", "text": "Noted: you prefer tea."}], "end_turn"),
        ]
    )
    runner = api.client().beta.messages.tool_runner(
        model="claude-scripted",
        max_tokens=512,
        tools=[MemstrataMemoryTool(memory)],
        messages=[{"role": "user", "content": "I prefer tea, remember that."}],
    )
    final = [message for message in runner][-1]
    assert final.content[0].text == "Noted: you prefer tea."
    assert len(api.requests) == 4
    assert {"type": "memory_20250818", "name": "memory"} in api.requests[0]["tools"]
    results = [
        block
        for request in api.requests[1:]
        for block in request["messages"][-1]["content"]
        if block["type"] == "tool_result"
    ]
    assert "/memories/core/AGENT.md" in json.dumps(results[0]["content"])
    assert "File created successfully" in json.dumps(results[1]["content"])
    assert results[2]["is_error"] is True and "Error:" in json.dumps(results[2]["content"])
    saved = (tmp_path / "ws" / "notes" / "inbox" / "user.md").read_text()
    assert "Ana prefers tea." in saved and SECRET not in saved


def test_the_async_tool(memory: Memory, tmp_path: Path) -> None:
    tool = MemstrataAsyncMemoryTool(memory)

    async def run() -> str:
        await tool.call(
            {
                "command": "create",
                "path": "/memories/semantic/facts.md",
                "file_text": "- sky is blue\n",
            }
        )
        return await tool.call({"command": "view", "path": "/memories/semantic/facts.md"})

    assert "sky is blue" in asyncio.run(run())
