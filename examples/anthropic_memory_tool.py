"""Claude's memory tool (memory_20250818) on a memstrata workspace, through the anthropic SDK.

    python examples/anthropic_memory_tool.py                   # a scripted Messages API
    ANTHROPIC_API_KEY=... python examples/anthropic_memory_tool.py --real

``MemstrataMemoryTool`` is the SDK's ``BetaAbstractMemoryTool``: the SDK's tool
runner sends Claude's ``/memories`` commands to it, and memstrata runs them on
the workspace's allowed files (journaled, redacted, never outside the
workspace). Without ``--real`` the Messages API is a script served in process
(the SDK's HTTP client with a mock transport), so no key and no network.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from memstrata import Memory
from memstrata.integrations.anthropic_memory import MemstrataMemoryTool

MODEL = "claude-sonnet-5-5"


def _reply(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _memory(number: int, **command: Any) -> dict[str, Any]:
    use = {"type": "tool_use", "id": f"toolu_{number}", "name": "memory", "input": command}
    return _reply([use], "tool_use")


SCRIPT = [
    _memory(1, command="view", path="/memories"),
    _memory(
        2,
        command="create",
        path="/memories/notes/inbox/preferences.md",
        file_text="# Preferences\n\n- Prefers green tea, no sugar.\n",
    ),
    _reply([{"type": "text", "text": "Got it: green tea, no sugar."}], "end_turn"),
]


def scripted_client() -> anthropic.Anthropic:
    """An Anthropic client whose Messages API answers from SCRIPT, in process."""
    replies = list(SCRIPT)

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent = json.loads(request.content)
        last = sent["messages"][-1]["content"]
        for block in last if isinstance(last, list) else []:
            if block.get("type") == "tool_result":
                print(f"  tool result: {str(block['content'])[:70]!r}")
        return httpx2.Response(200, json=replies.pop(0))

    transport = httpx2.MockTransport(answer)
    return anthropic.Anthropic(api_key="scripted", http_client=httpx2.Client(transport=transport))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="call the Messages API")
    parser.add_argument("--workspace", type=Path, help="keep the workspace here")
    args = parser.parse_args()
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="memstrata-claude-")) / "ws"
    client = anthropic.Anthropic() if args.real else scripted_client()
    with Memory.open(workspace) as memory:
        runner = client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=1024,
            tools=[MemstrataMemoryTool(memory)],
            messages=[{"role": "user", "content": "I take green tea, no sugar. Remember it."}],
        )
        for message in runner:
            for block in message.content:
                if block.type == "tool_use":
                    print(f"claude: memory {block.input}")
                elif block.type == "text":
                    print(f"claude: {block.text}")
    saved = workspace / "notes" / "inbox" / "preferences.md"
    print(f"{saved.relative_to(workspace)}:\n{saved.read_text() if saved.exists() else '(none)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
