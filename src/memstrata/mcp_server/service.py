"""``memstrata serve --database URL``: the memory tools over streamable HTTP
for many tenants at once, each request acting for the tenant its bearer
token names.

* **Tokens.** Every request but ``/health`` carries ``Authorization: Bearer
  <token>``; the token's tenant is read from the database on every request
  (``postgres.tokens.tenant_of``, in a worker thread), so a revoked token is
  refused from its next request on. Missing, unknown or revoked: 401 with a
  JSON error (``{"error": "invalid_token", ...}``) and ``WWW-Authenticate:
  Bearer``; a database that cannot be asked: 503.
* **Tenants apart.** The tenant travels from the token check to the tool in
  the ASGI scope (``CALL``, which no client can set); the tools are
  ``toolset``'s, the same as ``memstrata mcp``'s, run on the tenant's memory
  (``Tenants``, opened by the injectable ``open_memory(group)``, by default
  ``Memory.open(url, group=...)``), under ``tenants.acting_group``'s rules: a
  token reaches its own tenant and reads ``global``; no other tenant unless a
  main group is named.
* **Stateless HTTP with JSON answers**: no MCP session lives in the process,
  so any instance behind a load balancer answers any request, every request
  is authenticated on its own, and a shutdown has no open stream to wait for.
  No resources are served (the core files are read with ``memory_get``).
* **Health**: ``GET /health`` without a token: 200 ``{"status": "ok",
  "version": ..., "database": "ok"}``, or 503 with ``"error"`` for both when
  ``SELECT 1`` fails.
* **Logs**: one JSON line per request on the ``memstrata.requests`` logger:
  ``time``, ``tenant`` (null when refused), ``method``, ``path``, ``tool``
  (null unless a tool call), ``status``, ``refused`` (the tool answered an
  error), ``ms``. Never the token, the arguments or any memory's text. Health
  checks are logged at debug level only.
* **Shutdown** (SIGTERM or SIGINT): no new connection is accepted, requests
  in flight finish (``grace`` seconds at most), then every memory closes and
  the pool is released; the process exits 0. A second SIGINT forces it.
* **Pool**: the process's connections are the URL's shared pool
  (``Database.shared``), bounded by ``pool_size``.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from .. import __version__
from ..errors import BackendUnavailable, InvalidInput, MemstrataError
from ..memory import Memory
from ..postgres import tokens
from ..postgres.connect import Database
from ..storage.access import Groups
from ..tools import WRITES, Answer, answer
from . import _transport_security, allowed_hosts
from .tenants import DEFAULT_MAX_OPEN, Tenants, acting_group
from .toolset import new_server

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from starlette.types import Message, Receive, Scope, Send

__all__ = ["CALL", "HEALTH_PATH", "Call", "Service", "bearer_of", "open_by_url", "run"]

CALL = "memstrata.call"  # the ASGI scope key of the request's Call
HEALTH_PATH = "/health"
DEFAULT_GRACE_SECONDS = 30

log = logging.getLogger("memstrata")
requests_log = logging.getLogger("memstrata.requests")


@dataclass
class Call:
    """One authenticated request: its tenant, and what its tool call did."""

    tenant: str
    tool: str | None = None
    refused: bool = False


def open_by_url(url: str, group: str) -> Memory:
    """A tenant's memory in the database at ``url`` (the default opener)."""
    return Memory.open(url, group=group)


def bearer_of(scope: Scope) -> str | None:
    """The bearer token of a request (the scheme in any case, surrounding
    whitespace dropped), or None."""
    for name, value in scope.get("headers") or []:
        if bytes(name).lower() == b"authorization":
            scheme, _, credentials = bytes(value).partition(b" ")
            token = credentials.strip()
            if scheme.lower() == b"bearer" and token:
                return token.decode("latin-1")
            return None
    return None


class Service:
    """The ASGI app of the service (see the module)."""

    def __init__(
        self,
        database: Database,
        tenants: Tenants,
        *,
        host: str = "127.0.0.1",
        extra_hosts: Iterable[str] = (),
        main_group: str | None = None,
        tenant_of: Callable[[str], str | None] | None = None,
    ) -> None:
        if main_group is not None:
            Groups(Path(), main_group)  # InvalidInput for a name no group can have
        self.database = database
        self.tenants = tenants
        self._main = main_group
        self._tenant_of = tenant_of or partial(tokens.tenant_of, database)
        self.server = server = new_server(self.dispatch)
        self._mcp = server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            host=host,
            transport_security=_transport_security(allowed_hosts(host, extra_hosts)),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._mcp(scope, receive, send)
        elif kind != "http":
            await send({"type": "websocket.close", "code": 1008})
        elif scope.get("path") == HEALTH_PATH:
            await self._health(send)
        else:
            await self._authenticated(scope, receive, send)

    async def _authenticated(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        call: Call | None = None
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            token = bearer_of(scope)
            try:
                tenant = None if token is None else await self._check(token)
            except MemstrataError as exc:
                log.warning("memstrata: cannot check a token: %s", exc)
                await _json(sending, 503, {"error": "unavailable", "error_description": str(exc)})
                return
            if tenant is None:
                reason = "missing bearer token" if token is None else "unknown or revoked token"
                await _json(
                    sending,
                    401,
                    {"error": "invalid_token", "error_description": reason},
                    [(b"www-authenticate", b'Bearer error="invalid_token"')],
                )
                return
            call = Call(tenant)
            await self._mcp({**scope, CALL: call}, receive, sending)
        finally:
            _log_request(scope, call, status, started)

    async def _check(self, token: str) -> str | None:
        return await anyio.to_thread.run_sync(self._tenant_of, token)

    def dispatch(self, name: str, arguments: dict[str, Any], ctx: Context) -> Answer:
        """Run tool ``name`` for the tenant of the request ``ctx`` belongs to."""
        call = _call_of(ctx)
        if call is None:
            return Answer("Error: this call carries no tenant", True)
        call.tool = name
        given = dict(arguments)
        target = given.pop("group", None)
        try:
            if target is not None and not isinstance(target, str):
                raise InvalidInput("group must be a string")
            acting = acting_group(call.tenant, target, write=name in WRITES, main=self._main)
            with self.tenants.lease(acting) as memory:
                outcome = answer(memory, name, given)
        except MemstrataError as exc:
            outcome = Answer(f"Error: {exc}", True)
        call.refused = outcome.is_error
        return outcome

    def database_ok(self) -> bool:
        """Whether the database answers ``SELECT 1``."""
        try:
            with self.database.transaction(None, "check the database") as conn:
                conn.execute("SELECT 1")
        except MemstrataError as exc:
            log.warning("memstrata: the health check found the database down: %s", exc)
            return False
        return True

    async def _health(self, send: Send) -> None:
        ok = await anyio.to_thread.run_sync(self.database_ok)
        state = "ok" if ok else "error"
        body = {"status": state, "version": __version__, "database": state}
        await _json(send, 200 if ok else 503, body)
        requests_log.debug(json.dumps({"time": _now(), "path": HEALTH_PATH, "status": state}))


def _call_of(ctx: Any) -> Call | None:
    """The ``Call`` the token check put in the scope of ``ctx``'s HTTP request."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):
        return None
    scope = getattr(request, "scope", None)
    found = scope.get(CALL) if isinstance(scope, dict) else None
    return found if isinstance(found, Call) else None


async def _json(
    send: Send, status: int, body: dict[str, Any], headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _log_request(scope: Scope, call: Call | None, status: int, started: float) -> None:
    """One JSON line for a request (see the module: never a token or a text)."""
    record = {
        "time": _now(),
        "tenant": call.tenant if call else None,
        "method": scope.get("method"),
        "path": scope.get("path"),
        "tool": call.tool if call else None,
        "status": status,
        "refused": call.refused if call else False,
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }
    requests_log.info(json.dumps(record))


# -- the process ---------------------------------------------------------------------------


def run(
    url: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    pool_size: int = 8,
    max_open: int = DEFAULT_MAX_OPEN,
    main_group: str | None = None,
    extra_hosts: Iterable[str] = (),
    grace: int = DEFAULT_GRACE_SECONDS,
    open_memory: Callable[[str], Memory] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down cleanly (see the module)."""
    _log_to_stderr()
    with _signals_kept():
        database = Database.shared(url)
        try:
            database.limit(pool_size)
            tenants = Tenants(open_memory or partial(open_by_url, url), max_open)
            try:
                app = Service(
                    database, tenants, host=host, extra_hosts=extra_hosts, main_group=main_group
                )
                _event("start", host=host, port=port, version=__version__, pool_size=pool_size)
                _serve(app, host, port, grace)
            finally:
                tenants.close()
        finally:
            database.release()
        _event("stop")


def _serve(app: Service, host: str, port: int, grace: int) -> None:
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        log_config=None,  # its lines go through the process's JSON handler
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=grace,
    )
    try:
        uvicorn.Server(config).run()
    except SystemExit:  # uvicorn's way of failing to start; its reason is logged
        raise BackendUnavailable(
            f"cannot serve on {host}:{port} (the log line above says why)"
        ) from None


@contextmanager
def _signals_kept() -> Iterator[None]:
    """uvicorn, once it has shut down on a signal, raises that signal again
    under the handler it found: a no-op one here, so the process goes on to
    close the memories and exit 0. The previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


def _ignore(sig: int, frame: object) -> None:
    del sig, frame


def _event(name: str, **fields: Any) -> None:
    requests_log.info(json.dumps({"time": _now(), "event": name, **fields}))


def _log_to_stderr() -> None:
    """Every log line of the process as one JSON object on stderr: the request
    log at info, the rest (memstrata's, the SDK's, uvicorn's) from warning."""
    root = logging.getLogger()
    if any(isinstance(handler.formatter, _JsonLines) for handler in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    requests_log.setLevel(logging.INFO)


class _JsonLines(logging.Formatter):
    """A request record as it is (JSON already); any other as a JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == requests_log.name:
            return record.getMessage()
        line = {
            "time": _now(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        return json.dumps(line)
