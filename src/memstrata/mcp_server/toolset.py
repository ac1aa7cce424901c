"""The memory tools as MCP tools, defined once for both servers: ``memstrata
mcp`` (one workspace, the package's ``serve``) and ``memstrata serve
--database`` (many tenants, ``service``).

* ``new_server()`` is an ``MCPServer`` named ``memstrata`` with its
  instructions; ``add_tools(server, dispatch)`` registers ``memory_search``,
  ``memory_get``, ``memory_write``, ``memory_forget`` and ``memory_status``
  with the descriptions of ``memstrata.tools.TOOLS``. Each call becomes
  ``dispatch(name, arguments, ctx)``: the arguments given (a ``group`` only
  when named), and the request's ``Context``, from which a server that serves
  many callers learns which one this is.
* A result is the tool's text as content; a refusal is flagged ``isError``
  (no structured copy: the text is JSON already).
* This module imports the ``mcp`` SDK (the tools' ``Context`` annotation must
  resolve here): import it only once the SDK is known to be there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

from ..tools import TOOLS, Answer

__all__ = ["INSTRUCTIONS", "Dispatch", "add_tools", "new_server"]

INSTRUCTIONS = (
    "Long-term memory of this user. Use memory_search before answering questions "
    "about the past, memory_get to read a cited file, memory_write to keep a fact."
)

Dispatch = Callable[[str, dict[str, Any], Context], Answer]  # (tool, arguments, ctx) -> result


def new_server() -> MCPServer[Any]:
    return MCPServer(name="memstrata", instructions=INSTRUCTIONS)


def add_tools(server: MCPServer[Any], dispatch: Dispatch) -> None:
    """Register the five memory tools on ``server``, each run by ``dispatch``."""

    def memory_search(
        ctx: Context,
        query: str,
        k: int = 8,
        layer: str | None = None,
        session: str | None = None,
        group: str | None = None,
    ) -> object:
        arguments: dict[str, Any] = {"query": query, "k": k}
        for key, value in (("layer", layer), ("session", session), ("group", group)):
            if value is not None:
                arguments[key] = value
        return _result(dispatch("memory_search", arguments, ctx))

    def memory_get(
        ctx: Context, path: str, from_line: int = 1, lines: int = 400, group: str | None = None
    ) -> object:
        arguments = {"path": path, "from_line": from_line, "lines": lines}
        return _result(dispatch("memory_get", _with_group(arguments, group), ctx))

    def memory_write(
        ctx: Context, text: str, category: str | None = None, group: str | None = None
    ) -> object:
        arguments = _with_group({"text": text, "category": category}, group)
        return _result(dispatch("memory_write", arguments, ctx))

    def memory_forget(ctx: Context, id: str, group: str | None = None) -> object:  # noqa: A002
        return _result(dispatch("memory_forget", _with_group({"id": id}, group), ctx))

    def memory_status(ctx: Context, group: str | None = None) -> object:
        return _result(dispatch("memory_status", _with_group({}, group), ctx))

    for tool in (memory_search, memory_get, memory_write, memory_forget, memory_status):
        server.add_tool(
            tool,
            name=tool.__name__,
            description=TOOLS[tool.__name__]["description"],
            structured_output=False,
        )


def _result(outcome: Answer) -> CallToolResult:
    """``outcome`` as an MCP tool result; a refusal is an error result (``isError``)."""
    text = TextContent(type="text", text=outcome.text)
    return CallToolResult(content=[text], is_error=outcome.is_error)


def _with_group(arguments: dict[str, Any], group: str | None) -> dict[str, Any]:
    return arguments if group is None else {**arguments, "group": group}
