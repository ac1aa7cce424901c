"""``memstrata mcp``: the memory tools over the Model Context Protocol, with the
official SDK (``mcp`` ≥ 2.3, ``MCPServer``).

* Tools: ``memory_search``, ``memory_get``, ``memory_write``,
  ``memory_forget``, ``memory_status`` — the implementations of
  ``memstrata.tools`` (one code path for every interface), results as text.
* Resources: the core files, ``memstrata://core/AGENT.md``, ``USER.md``,
  ``SOUL.md``.
* One long-lived process serves many calls on one open ``Memory``: writes
  are serialised by its lock, reads do not wait for them.
* Transports: stdio (the default), or streamable HTTP on loopback
  (``--http``); binding to any other address needs a bearer token, checked
  on every request.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import TYPE_CHECKING, Any

from .errors import BackendUnavailable, InvalidInput
from .memory import Memory
from .tools import TOOLS, dispatch

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["build_server", "serve"]

CORE_FILES = ("AGENT.md", "USER.md", "SOUL.md")


def _sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise BackendUnavailable(
            "the MCP server needs the mcp SDK: pip install 'memstrata[mcp]'"
        ) from exc
    return MCPServer


def build_server(memory: Memory) -> Any:
    """An ``MCPServer`` whose tools and resources act on ``memory``."""
    server = _sdk()(
        name="memstrata",
        instructions=(
            "Long-term memory of this user. Use memory_search before answering questions "
            "about the past, memory_get to read a cited file, memory_write to keep a fact."
        ),
    )

    @server.tool(name="memory_search", description=TOOLS["memory_search"]["description"])
    def memory_search(
        query: str, k: int = 8, layer: str | None = None, session: str | None = None
    ) -> str:
        arguments: dict[str, Any] = {"query": query, "k": k}
        if layer is not None:
            arguments["layer"] = layer
        if session is not None:
            arguments["session"] = session
        return dispatch(memory, "memory_search", arguments)

    @server.tool(name="memory_get", description=TOOLS["memory_get"]["description"])
    def memory_get(path: str, from_line: int = 1, lines: int = 400) -> str:
        return dispatch(
            memory, "memory_get", {"path": path, "from_line": from_line, "lines": lines}
        )

    @server.tool(name="memory_write", description=TOOLS["memory_write"]["description"])
    def memory_write(text: str, category: str | None = None) -> str:
        return dispatch(memory, "memory_write", {"text": text, "category": category})

    @server.tool(name="memory_forget", description=TOOLS["memory_forget"]["description"])
    def memory_forget(id: str) -> str:  # noqa: A002 - the tool's argument name
        return dispatch(memory, "memory_forget", {"id": id})

    @server.tool(name="memory_status", description=TOOLS["memory_status"]["description"])
    def memory_status() -> str:
        return dispatch(memory, "memory_status", {})

    for file in CORE_FILES:
        _core_resource(server, memory, file)
    return server


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


def serve(
    memory: Memory,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
) -> None:
    """Serve ``memory`` until the process ends (stdio, or HTTP when ``http``)."""
    server = build_server(memory)
    if not http:
        server.run("stdio")
        return
    if not _loopback(host) and not token:
        raise InvalidInput(
            f"refusing to serve on {host}: only loopback is served without a bearer token "
            "(give --token or set MEMSTRATA_MCP_TOKEN)"
        )
    import uvicorn

    app = server.streamable_http_app()
    if token:
        app = _BearerGuard(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


class _BearerGuard:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self._token = app, token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            expected = b"Bearer " + self._token
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)
