"""The memory tools and prompts as MCP, defined once for both servers:
``memstrata mcp`` (one workspace, the package's ``serve``) and ``memstrata
serve --database`` (many tenants, ``service``).

* ``new_server(dispatch)`` is an ``MCPServer`` named ``memstrata``, its
  version memstrata's, with its instructions, every tool of
  ``memstrata.tools.SPECS`` and the prompts. Each tool is its one definition
  (``tools.specs``) as MCP has it: the description, the input schema as it
  is (parameter descriptions, enums, bounds, no additional property), the
  result schema as ``outputSchema``, the hints as annotations
  (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``; no open world).
* A call becomes ``dispatch(name, arguments, ctx)``: the arguments as the
  client sent them (checked by ``tools.calls``, which refuses an unknown
  one, not by the SDK: one check for every interface), and the request's
  ``Context``, from which a server that serves many callers learns which one
  this is. A result is structured content (the result object) with its JSON
  as text; a refusal is an error result (``isError``) whose text is ``Error: …``.
* Prompts: ``recall`` (what memory knows about a topic) and
  ``save_conversation`` (keep what this conversation established).
* This module imports the ``mcp`` SDK (and pydantic): import it only once
  the SDK is known to be there (``require_sdk``). It imports no engine: the
  tools are listed before a memory is open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

from .. import __version__
from ..tools.catalog import SPECS
from ..tools.specs import Spec

if TYPE_CHECKING:
    from ..tools.calls import Answer

__all__ = ["INSTRUCTIONS", "Dispatch", "new_server"]

INSTRUCTIONS = (
    "Long-term memory of this user. Before answering a question about the user, their "
    "work or earlier conversations, call memory_search (or memory_context for a whole "
    "context) and cite what you use. Capture the user's own words with memory_observe, keep "
    "a fact with memory_write, fix a wrong one with memory_correct (its id from a hit), and "
    "record each finished exchange with memory_record_turn."
)

Dispatch = Callable[[str, dict[str, Any], Context], "Answer"]  # (tool, arguments, ctx) -> result


class _Arguments(ArgModelBase):
    """The arguments as sent, handed on whole: ``tools.calls`` checks them."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def new_server(dispatch: Dispatch) -> MCPServer[Any]:
    """The server with every tool (run by ``dispatch``) and the prompts."""
    tools = [_tool(spec, dispatch) for spec in SPECS]
    server: MCPServer[Any] = MCPServer(
        name="memstrata", instructions=INSTRUCTIONS, version=__version__, tools=tools
    )
    _add_prompts(server)
    return server


def _tool(spec: Spec, dispatch: Dispatch) -> Tool:
    name = spec.name

    def run(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        return result(dispatch(name, arguments, ctx))

    hints = ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent,
        open_world_hint=False,
    )
    return Tool(
        fn=run,
        name=name,
        title=spec.title,
        description=spec.description,
        parameters=spec.parameters,
        fn_metadata=FuncMetadata(arg_model=_Arguments, output_schema=spec.result),
        is_async=False,
        context_kwarg="ctx",
        annotations=hints,
    )


def result(outcome: Answer) -> CallToolResult:
    """``outcome`` as an MCP tool result: structured, or an error result (``isError``)."""
    text = TextContent(type="text", text=outcome.text)
    if outcome.is_error:
        return CallToolResult(content=[text], is_error=True)
    return CallToolResult(content=[text], structured_content=outcome.data, is_error=False)


# -- prompts -------------------------------------------------------------------------------


def _add_prompts(server: MCPServer[Any]) -> None:
    @server.prompt(
        name="recall",
        title="Recall what memory knows",
        description="Look up everything memory knows about a topic, and answer from it with "
        "citations.",
    )
    def recall(topic: str) -> str:
        return (
            f"Recall what you know about: {topic}\n\n"
            f"1. Call memory_search with the query {topic!r} (k=8); search again with other "
            "words if the hits are thin.\n"
            "2. Read the cited lines with memory_get when a snippet is not enough.\n"
            "3. Answer from what you found, citing each hit (path:lines). Say plainly what "
            "memory does not know; do not fill gaps by guessing."
        )

    @server.prompt(
        name="save_conversation",
        title="Save this conversation",
        description="Keep what this conversation established: its facts, corrections, "
        "progress and the exchange itself.",
    )
    def save_conversation(session: str = "default") -> str:
        return (
            "Save this conversation to memory before it ends.\n\n"
            "1. For each thing the user stated about themselves, their preferences, "
            "decisions or projects, call memory_observe with their own words "
            f"(session {session!r}).\n"
            "2. For each durable fact you established together, call memory_write with one "
            "self-contained sentence; if it replaces something memory holds, call "
            "memory_search to find the old fact and memory_correct with its id instead.\n"
            "3. Note open tasks and progress with memory_working_write.\n"
            f"4. Call memory_record_turn (session {session!r}) for the last exchange.\n"
            "Then say in one line what you saved."
        )
