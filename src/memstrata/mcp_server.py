"""``memstrata mcp``: the memory tools over the Model Context Protocol, with the
official SDK (``mcp`` ≥ 2.3, ``MCPServer``).

* Tools: ``memory_search``, ``memory_get``, ``memory_write``,
  ``memory_forget``, ``memory_status`` — the implementations of
  ``memstrata.tools`` (one code path for every interface), results as text.
  A refusal (access denied, a path the guard refuses, a bad argument,
  something not found) is an MCP error result: ``isError`` set, its
  ``Error: …`` text as the content.
* Resources: the core files, ``memstrata://core/AGENT.md``, ``USER.md``,
  ``SOUL.md``.
* One long-lived process serves many calls on one open ``Memory``: writes
  are serialised by its lock, reads do not wait for them.
* Transports: stdio (the default), or streamable HTTP on loopback
  (``--http``); binding to any other address needs a bearer token
  (surrounding whitespace stripped, never empty), checked in constant time
  on every request.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import BackendUnavailable, InvalidInput, MemstrataError
from .memory import Memory
from .tools import TOOLS, Answer, GroupTools, answer

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult

log = logging.getLogger("memstrata")

__all__ = ["bearer_token", "build_server", "serve"]

CORE_FILES = ("AGENT.md", "USER.md", "SOUL.md")


def _sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise BackendUnavailable(
            "the MCP server needs the mcp SDK: pip install 'memstrata[mcp]'"
        ) from exc
    return MCPServer


Run = Callable[[str, dict[str, Any]], Answer]  # (tool, arguments) -> result


def build_server(memory: Memory, run: Run | None = None) -> Any:
    """An ``MCPServer`` whose tools and resources act on ``memory`` (through
    ``run`` when given: a group-aware dispatch)."""
    if run is None:

        def run(name: str, arguments: dict[str, Any]) -> Answer:
            return answer(memory, name, arguments)

    server = _sdk()(
        name="memstrata",
        instructions=(
            "Long-term memory of this user. Use memory_search before answering questions "
            "about the past, memory_get to read a cited file, memory_write to keep a fact."
        ),
    )

    @server.tool(name="memory_search", description=TOOLS["memory_search"]["description"], **_TEXT)
    def memory_search(
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
        return _result(run("memory_search", arguments))

    @server.tool(name="memory_get", description=TOOLS["memory_get"]["description"], **_TEXT)
    def memory_get(
        path: str, from_line: int = 1, lines: int = 400, group: str | None = None
    ) -> object:
        arguments = {"path": path, "from_line": from_line, "lines": lines}
        return _result(run("memory_get", _with_group(arguments, group)))

    @server.tool(name="memory_write", description=TOOLS["memory_write"]["description"], **_TEXT)
    def memory_write(text: str, category: str | None = None, group: str | None = None) -> object:
        return _result(
            run("memory_write", _with_group({"text": text, "category": category}, group))
        )

    @server.tool(name="memory_forget", description=TOOLS["memory_forget"]["description"], **_TEXT)
    def memory_forget(id: str, group: str | None = None) -> object:  # noqa: A002 - its name
        return _result(run("memory_forget", _with_group({"id": id}, group)))

    @server.tool(name="memory_status", description=TOOLS["memory_status"]["description"], **_TEXT)
    def memory_status(group: str | None = None) -> object:
        return _result(run("memory_status", _with_group({}, group)))

    for file in CORE_FILES:
        _core_resource(server, memory, file)
    return server


# Each tool returns its own CallToolResult: the text as content, a refusal flagged
# isError (no structured copy of the text, which is JSON already).
_TEXT: dict[str, Any] = {"structured_output": False}


def _result(outcome: Answer) -> CallToolResult:
    """``outcome`` as an MCP tool result; a refusal is an error result (``isError``)."""
    from mcp.types import CallToolResult, TextContent

    text = TextContent(type="text", text=outcome.text)
    return CallToolResult(content=[text], is_error=outcome.is_error)


def _with_group(arguments: dict[str, Any], group: str | None) -> dict[str, Any]:
    return arguments if group is None else {**arguments, "group": group}


def _core_resource(server: MCPServer[Any], memory: Memory, file: str) -> None:
    @server.resource(f"memstrata://core/{file}", name=file, mime_type="text/markdown")
    def read_core() -> str:
        return memory.core(file)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_token(token: str | None) -> str | None:
    """``token`` without surrounding whitespace (None: no token); ``InvalidInput``
    when nothing is left of it."""
    if token is None:
        return None
    cleaned = token.strip()
    if not cleaned:
        raise InvalidInput(
            "the bearer token (--token or MEMSTRATA_MCP_TOKEN) is empty or only whitespace: "
            "give a secret, or no token at all to serve on loopback"
        )
    return cleaned


def serve(
    memory: Memory,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    main_group: str = "main",
) -> None:
    """Serve ``memory`` until the process ends (stdio, or HTTP when ``http``).

    A memory opened for a group serves that group as the caller, under the
    rules of ``access.Groups`` (``main_group`` may name any group; the others
    their own and ``global``)."""
    token = bearer_token(token)
    if http and not _loopback(host) and token is None:
        raise InvalidInput(
            f"refusing to serve on {host}: only loopback is served without a bearer token "
            "(give --token or set MEMSTRATA_MCP_TOKEN)"
        )
    run: Run | None = None
    if memory.workspace.group is not None:
        group_tools = GroupTools(memory.workspace.root, main_group)
        group_tools.adopt(memory)
        caller = memory.workspace.group

        def run(name: str, arguments: dict[str, Any]) -> Answer:
            return group_tools.answer(name, arguments, group=caller)

    server = build_server(memory, run)
    # Build the index's RAM side while the client connects, not at its first search.
    threading.Thread(target=_warm, args=(memory,), name="memstrata-warm", daemon=True).start()
    if not http:
        server.run("stdio")
        return
    _serve_http(server, host, port, token)


def _serve_http(server: Any, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app()
    if token is not None:
        app = _BearerGuard(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _warm(memory: Memory) -> None:
    """Bring the index up to date and build its RAM side; a failure costs only
    speed (the first search does the same work and reports its own errors)."""
    try:
        memory.reindex(warm=True)
    except (MemstrataError, OSError, RuntimeError, sqlite3.Error) as exc:  # closed at exit
        log.info("memstrata: warming the index failed: %s", exc)


# -- the bearer token ------------------------------------------------------------------


class _BearerGuard:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer
    <token>`` (the scheme in any case, the token compared in constant time);
    401 otherwise. A websocket is closed (the MCP transport has none)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self._token = app, token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope.get("type")
        if kind == "lifespan" or (kind == "http" and self._authorised(scope)):
            await self.app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain"),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})

    def _authorised(self, scope: dict[str, Any]) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, credentials = bytes(given).partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)
