"""``MemstrataMemoryTool``: the Anthropic SDK's memory tool (``memory_20250818``) on a workspace.

Install with ``pip install 'memstrata[integrations]'`` (it needs ``anthropic``).

    import anthropic
    from memstrata import Memory
    from memstrata.integrations.anthropic_memory import MemstrataMemoryTool

    tool = MemstrataMemoryTool(Memory.open("~/agent-memory"))
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-5-5", max_tokens=1024, tools=[tool],
        messages=[{"role": "user", "content": "Remember that I like coffee"}],
    )
    for message in runner: ...

It subclasses the SDK's ``BetaAbstractMemoryTool`` (and
``BetaAsyncAbstractMemoryTool`` for ``AsyncAnthropic``): the SDK parses each
``tool_use`` into its typed command and calls ``view``/``create``/
``str_replace``/``insert``/``delete``/``rename`` here, each of which runs
``tools.memory_tool.MemoryToolHandler`` (the path guard, the journal, the
redaction and the exact answers are all there, see that module). A refusal
(an answer starting ``Error:``) is raised as the SDK's ``ToolError``, so the
tool result goes back to the model with ``is_error: true``.
``clear_all_memory`` is refused: a workspace is not wiped through a tool.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..memory import Memory
from ..tools.memory_tool import MemoryToolHandler
from . import require

require("anthropic.lib.tools")

from anthropic.lib.tools import ToolError  # noqa: E402
from anthropic.tools.memory import (  # noqa: E402
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
)

__all__ = ["MemstrataAsyncMemoryTool", "MemstrataMemoryTool"]


class MemstrataMemoryTool(BetaAbstractMemoryTool):
    """The memory tool for ``Anthropic().beta.messages.tool_runner`` (see the module)."""

    def __init__(self, memory: Memory, **options: Any) -> None:
        super().__init__(**options)
        self.handler = MemoryToolHandler(memory)

    def view(self, command: Any) -> str:
        return _run(self.handler, command)

    def create(self, command: Any) -> str:
        return _run(self.handler, command)

    def str_replace(self, command: Any) -> str:
        return _run(self.handler, command)

    def insert(self, command: Any) -> str:
        return _run(self.handler, command)

    def delete(self, command: Any) -> str:
        return _run(self.handler, command)

    def rename(self, command: Any) -> str:
        return _run(self.handler, command)

    def clear_all_memory(self) -> str:
        raise ToolError(_REFUSED)


class MemstrataAsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """The memory tool for ``AsyncAnthropic``: the same commands on a worker thread."""

    def __init__(self, memory: Memory, **options: Any) -> None:
        super().__init__(**options)
        self.handler = MemoryToolHandler(memory)

    async def view(self, command: Any) -> str:
        return await asyncio.to_thread(_run, self.handler, command)

    async def create(self, command: Any) -> str:
        return await asyncio.to_thread(_run, self.handler, command)

    async def str_replace(self, command: Any) -> str:
        return await asyncio.to_thread(_run, self.handler, command)

    async def insert(self, command: Any) -> str:
        return await asyncio.to_thread(_run, self.handler, command)

    async def delete(self, command: Any) -> str:
        return await asyncio.to_thread(_run, self.handler, command)

    async def rename(self, command: Any) -> str:
        return await asyncio.to_thread(_run, self.handler, command)

    async def clear_all_memory(self) -> str:
        raise ToolError(_REFUSED)


_REFUSED = "Error: clear_all_memory is not supported; delete files one by one."


def _run(handler: MemoryToolHandler, command: Any) -> str:
    """The handler's answer to the SDK's typed ``command``; a refusal as ``ToolError``."""
    fields = command.model_dump(exclude_none=True) if hasattr(command, "model_dump") else command
    answer = handler.handle(fields)
    if answer.startswith("Error:"):
        raise ToolError(answer)
    return answer
