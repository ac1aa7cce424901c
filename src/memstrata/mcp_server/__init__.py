"""``memstrata mcp``: the memory tools over the Model Context Protocol, with the
official SDK (``mcp`` ≥ 2.3, ``MCPServer``).

The package's modules: this one serves one workspace; ``toolset`` defines
the MCP tools both servers share; ``service`` is ``memstrata serve
--database``, many tenants over HTTP, each request's bearer token naming its
tenant, whose memories ``tenants`` keeps open. Only ``toolset`` and
``service`` import the SDK at import time (``require_sdk`` first).

* Tools and prompts: ``toolset``'s, every tool of ``memstrata.tools`` (one
  definition and one code path for every interface), each result
  structured. A refusal (access denied, a path the guard refuses, a bad or
  unknown argument, something not found) is an MCP error result:
  ``isError`` set, its ``Error: …`` text as the content.
* Resources: the core files (``memstrata://core/AGENT.md``, ``USER.md``,
  ``SOUL.md``), ``memstrata://MEMORY.md`` and ``memstrata://daily/today``
  (today's daily note; empty before the first exchange of the day), each
  read when asked.
* One long-lived process serves many calls on one open ``Memory``: writes
  are serialised by its lock, reads do not wait for them.
* Start-up: the server is built from the tools' definitions alone (no
  engine imported) and answers ``initialize`` at once; ``memstrata mcp``
  hands ``serve`` a function that opens the memory, which runs in a
  background thread once the server runs (``_Served``), then the index
  warm-up; every call and resource read waits for the open. An open that
  fails makes every call an error result (and the command exits with one
  ``Error:`` line).
* Transports: stdio (the default), or streamable HTTP (``--http``). Bound
  to loopback, the SDK's DNS-rebinding protection stays: the Host header
  must name 127.0.0.1, localhost or [::1] (or an ``allowed_hosts`` entry).
  Binding to any other address needs a bearer token (surrounding
  whitespace stripped, never empty), checked in constant time on every
  request; the Host header may then also name the bound address, this
  machine's hostname, its own addresses when bound to every address
  (``0.0.0.0``, ``::``; read from ``/proc`` on Linux, no lookup), and the
  ``allowed_hosts`` (names only DNS or a proxy knows); any other is 421.
* Shutdown: the index warm-up thread (it runs onnxruntime) is stopped at its
  next step and joined before the memory closes; one still inside native
  code after ``STOP_WAIT_SECONDS`` (a model load, a batch of embeddings) is
  not waited for: the memory is flushed and the process leaves at once
  (``os._exit``), since an interpreter that finalises under a thread in
  onnxruntime aborts (``terminate called without an active exception``).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging
import os
import re
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailable, InvalidInput, MemstrataError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from ..memory import Memory
    from ..tools.calls import Answer

log = logging.getLogger("memstrata")

__all__ = ["allowed_hosts", "bearer_token", "build_server", "require_sdk", "serve"]

CORE_FILES = ("AGENT.md", "USER.md", "SOUL.md")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
EVERY_ADDRESS = frozenset({"0.0.0.0", "::", ""})
STOP_WAIT_SECONDS = 1.0  # within the 2 s an MCP client gives a server to exit
_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?")


def require_sdk() -> None:
    """``BackendUnavailable`` with the install hint when the SDK is missing."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailable(
            "the MCP server needs the mcp SDK: pip install 'memstrata[mcp]'"
        ) from exc


Run = Callable[[str, dict[str, Any]], "Answer"]  # (tool, arguments) -> result
Opener = Callable[[], "Memory"]  # opens the memory to serve


def build_server(memory: Memory | Opener, run: Run | None = None) -> Any:
    """An ``MCPServer`` whose tools and resources act on ``memory`` (a
    ``Memory``, or a function that returns it when a call needs it: see
    ``serve``), through ``run`` when given (a group-aware dispatch); the tools
    are ``toolset``'s. Building it imports no engine."""
    current: Opener = memory if callable(memory) else (lambda: memory)
    if run is None:

        def run(name: str, arguments: dict[str, Any]) -> Answer:
            from ..tools.calls import answer

            return answer(current(), name, arguments)

    require_sdk()
    from .toolset import new_server

    chosen = run
    server = new_server(lambda name, arguments, ctx: chosen(name, arguments))
    for file in CORE_FILES:
        _core_resource(server, current, file)
    _file_resources(server, current)
    return server


def _core_resource(server: MCPServer[Any], current: Opener, file: str) -> None:
    @server.resource(f"memstrata://core/{file}", name=file, mime_type="text/markdown")
    def read_core() -> str:
        return current().core.read(file)


def _file_resources(server: MCPServer[Any], current: Opener) -> None:
    @server.resource(
        "memstrata://MEMORY.md",
        name="MEMORY.md",
        description="The long-term facts, by category",
        mime_type="text/markdown",
    )
    def read_memory() -> str:
        memory = current()
        if not memory.read_only:
            memory.flush()  # what was just written is in it
        return _text_of(memory, "MEMORY.md")

    @server.resource(
        "memstrata://daily/today",
        name="today",
        description="Today's daily note (memory/<day>.md): the day's exchanges",
        mime_type="text/markdown",
    )
    def read_today() -> str:
        return _text_of(current(), f"memory/{date.today().isoformat()}.md")


def _text_of(memory: Memory, rel: str) -> str:
    """A workspace file's text ("" when it does not exist)."""
    from ..storage.files import storage_errors

    with storage_errors(f"read {rel}"):
        data = memory.workspace.volume.read(rel)
    return "" if data is None else data.decode("utf-8", "replace")


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
    memory: Memory | Opener,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    main_group: str = "main",
    extra_hosts: Iterable[str] = (),
    settings: Mapping[str, Any] | None = None,
    watch: bool = False,
    failed: Callable[[BaseException], None] | None = None,
) -> None:
    """Serve ``memory`` until the process ends (stdio, or HTTP when ``http``).

    ``memory``: a ``Memory``, or a function that opens one: then the server
    answers ``initialize`` at once and the memory is opened in a background
    thread, every tool call and resource read waiting for it (``_Served``);
    the server closes it at the end. An open that fails makes each call an
    error, and calls ``failed`` with the exception when given (``memstrata
    mcp`` says it in one line and exits). ``watch``: take in hand edits while
    serving (``Memory.watch_files``).

    A memory opened for a group serves that group as the caller, under the
    rules of ``access.Groups`` (``main_group`` may name any group; the others
    their own and ``global``); another group's memory opens with its own
    ``memstrata.toml`` and ``settings`` (the environment's) over it.
    ``extra_hosts``: more Host header values the HTTP server answers (see
    ``allowed_hosts``). When the transport ends, the
    index warm-up stops first (or the process leaves at once: see the module)."""
    token = bearer_token(token)
    security = None
    if http:
        if not _loopback(host) and token is None:
            raise InvalidInput(
                f"refusing to serve on {host}: only loopback is served without a bearer token "
                "(give --token or set MEMSTRATA_MCP_TOKEN)"
            )
        security = _transport_security(allowed_hosts(host, extra_hosts))
    served = _Served(memory, main_group, settings or {}, watch=watch, failed=failed)
    server = build_server(served.memory, served.run)
    # The open, then the index warm-up, while the client connects. (Started after the
    # handshake instead, initialize took as long: measured; and a workspace that does not
    # open would then say so only to a client.)
    served.start()
    try:
        if security is None:
            server.run("stdio")
        else:
            _serve_http(server, host, port, token, security)
    except BaseException:
        served.stop(exit_code=1)
        raise
    served.stop(exit_code=0)


class _Served:
    """The memory a server serves, opened in a background thread (``start``:
    once; at the latest at the first call), then its index warmed there
    (``_Warmup``); ``memory`` and ``run`` wait for the open. Invariant:
    ``_ready`` is set once ``_memory`` and ``_run``, or ``_error``, are final."""

    def __init__(
        self,
        memory: Memory | Opener,
        main_group: str,
        settings: Mapping[str, Any],
        *,
        watch: bool,
        failed: Callable[[BaseException], None] | None,
    ) -> None:
        self._opener: Opener = memory if callable(memory) else (lambda: memory)
        self._owned = callable(memory)  # opened here: closed here
        self._main_group, self._settings = main_group, settings
        self._watch, self._failed = watch, failed
        self._ready = threading.Event()
        self._memory: Memory | None = None
        self._error: BaseException | None = None
        self._run: Run | None = None
        self._flush: Callable[[], None] = lambda: None
        self._warm: _Warmup | None = None
        self._stopping = threading.Event()
        self._start_lock = threading.Lock()
        self._started = False
        self._thread = threading.Thread(target=self._open, name="memstrata-open", daemon=True)

    def start(self) -> bool:
        """Start the open (once, and not after ``stop``); whether it started."""
        with self._start_lock:
            if not self._started and not self._stopping.is_set():
                self._thread.start()
                self._started = True
            return self._started

    def memory(self) -> Memory:
        """The memory, once open (``MemstrataError`` if the open failed)."""
        if not self.start():
            raise BackendUnavailable("the server is stopping: its memory was not opened")
        self._ready.wait()
        if self._memory is None:
            error = self._error
            if isinstance(error, MemstrataError):
                raise error
            raise BackendUnavailable(f"the memory could not be opened: {error!r}")
        return self._memory

    def run(self, name: str, arguments: dict[str, Any]) -> Answer:
        from ..tools.calls import refusal

        try:
            self.memory()
        except MemstrataError as exc:
            return refusal(exc)
        assert self._run is not None
        return self._run(name, arguments)

    def _open(self) -> None:
        try:
            memory = self._opener()
        except BaseException as exc:
            self._fail(exc)
            return
        try:
            self._run, self._flush = self._dispatch(memory)
            if self._watch:
                memory.watch_files()
        except BaseException as exc:
            if self._owned:
                with contextlib.suppress(MemstrataError):
                    memory.close()
            self._fail(exc)
            return
        self._memory = memory
        self._ready.set()
        if not self._stopping.is_set():
            self._warm = _Warmup(memory)

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        self._ready.set()
        if self._failed is not None:
            self._failed(exc)

    def _dispatch(self, memory: Memory) -> tuple[Run, Callable[[], None]]:
        """How a call runs on ``memory`` (group-aware for a group's memory), and its flush."""
        from ..tools.calls import answer
        from ..tools.groups import GroupTools

        if memory.workspace.group is None:
            return (lambda name, arguments: answer(memory, name, arguments)), memory.flush
        group_tools = GroupTools(memory.workspace.location, self._main_group, **self._settings)
        group_tools.adopt(memory)
        caller = memory.workspace.group

        def run(name: str, arguments: dict[str, Any]) -> Answer:
            return group_tools.answer(name, arguments, group=caller)

        return run, group_tools.flush

    def stop(self, *, exit_code: int) -> None:
        """Wait for the open (``STOP_WAIT_SECONDS`` at most: else leave now),
        stop the warm-up (see ``_Warmup.stop``), close what was opened here."""
        with self._start_lock:
            self._stopping.set()
            if not self._started:  # nothing was opened
                return
        self._thread.join(STOP_WAIT_SECONDS)
        if self._thread.is_alive():
            log.info("memstrata: leaving while the memory opens")
            _leave(exit_code)
        if self._warm is not None:
            self._warm.stop(self._flush, exit_code=exit_code)
        if self._owned and self._memory is not None:
            self._memory.close()


def _serve_http(
    server: Any, host: str, port: int, token: str | None, security: TransportSecuritySettings
) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=security)
    if token is not None:
        app = _BearerGuard(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


# -- the hosts the HTTP server answers -----------------------------------------------------


def allowed_hosts(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host header values an HTTP server bound to ``host`` answers, in the
    SDK's form (``name``, and ``name:*`` for any port): the loopback names;
    beyond loopback also ``host`` itself and this machine's hostname, and when
    ``host`` is every address (``0.0.0.0``, ``::``) this machine's addresses;
    then each of ``extra``: a name or an address, with a port or for any port
    (``InvalidInput`` for anything else)."""
    names = list(LOOPBACK_HOSTS)
    if not _loopback(host):
        if host not in EVERY_ADDRESS:
            names.append(_bracketed(host))
        names.append(socket.gethostname())
        if host in EVERY_ADDRESS:
            names += [_bracketed(address) for address in _own_addresses(ipv6=host == "::")]
    found: list[str] = []
    for name, port in [(name, None) for name in names] + [_extra_host(value) for value in extra]:
        for form in dict.fromkeys((name, name.lower())):
            found += [f"{form}:{port}"] if port else [form, f"{form}:*"]
    return list(dict.fromkeys(found))


def _bracketed(address: str) -> str:
    """An IPv6 address in its Host header form (``[::1]``); anything else as it is."""
    try:
        return f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    except ValueError:
        return address


def _extra_host(value: str) -> tuple[str, str | None]:
    """One ``--allowed-host`` as (host, port or None for any port): ``name``,
    ``name:port``, an IPv4 address, an IPv6 one (``fe80::1``, ``[fe80::1]``,
    ``[fe80::1]:8765``)."""
    given = value.strip()
    host, port = given, None
    if given.startswith("[") and "]" in given:
        host, _, rest = given[1:].partition("]")
        if rest:
            port = rest.removeprefix(":") if rest.startswith(":") else ""
    elif given.count(":") == 1:
        host, port = given.split(":")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if given.startswith("[") or not _HOST_NAME.fullmatch(host):
            port = ""  # not a host: refused below
    else:
        host = _bracketed(str(address))
    if port is not None and not port.isdigit():
        raise InvalidInput(
            f"--allowed-host {value!r} is not a host: give a name or an address, with or "
            "without :port (e.g. mybox.lan, 192.168.1.20, [fe80::1], mybox.lan:8765)"
        )
    return host, port


def _own_addresses(*, ipv6: bool) -> list[str]:
    """This machine's own IP addresses, read from ``/proc/net`` (Linux; none
    elsewhere): no name lookup, no traffic."""
    found: list[str] = []
    try:
        last = ""
        for line in Path("/proc/net/fib_trie").read_text().splitlines():
            part = line.strip()
            if part.startswith("|-- "):
                last = part[4:]
            elif part.startswith("/32 host LOCAL") and last:
                found.append(last)
    except OSError:
        pass
    if ipv6:
        try:
            for line in Path("/proc/net/if_inet6").read_text().splitlines():
                if line.strip():
                    found.append(str(ipaddress.IPv6Address(int(line.split()[0], 16))))
        except (OSError, ValueError):
            pass
    return list(dict.fromkeys(found))


def _transport_security(hosts: list[str]) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection, answering ``hosts`` (and pages served from them)."""
    from mcp.server.transport_security import TransportSecuritySettings

    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


# -- the index warm-up ---------------------------------------------------------------------


class _Stopped(Exception):
    """Raised in the warm-up thread at its next step once ``_Warmup.stop`` was called."""


class _Warmup:
    """Brings the index up to date and builds its RAM side in a daemon thread;
    ``stop`` ends it before the process does (see the module)."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memstrata-warm", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """A failure costs only speed (the first search does the same work and
        reports its own errors)."""
        try:
            self._step("start", 0, 0)
            self._memory.reindex(warm=True, progress=self._step)
        except _Stopped:
            log.debug("memstrata: the index warm-up stopped for the shutdown")
        except (MemstrataError, OSError, RuntimeError, sqlite3.Error) as exc:
            log.info("memstrata: warming the index failed: %s", exc)

    def _step(self, stage: str, done: int, total: int) -> None:
        del stage, done, total
        if self._stopping.is_set():
            raise _Stopped

    def stop(self, flush: Callable[[], None], *, exit_code: int) -> None:
        """Stop the warm-up and wait for it (``STOP_WAIT_SECONDS`` at most). If it
        is still in native code then, ``flush`` the memory and end the process
        now with ``exit_code``: never finalise the interpreter under it."""
        self._stopping.set()
        self._thread.join(STOP_WAIT_SECONDS)
        if not self._thread.is_alive():
            return
        log.info("memstrata: leaving while the index warm-up runs; the next start finishes it")
        try:
            flush()
        except MemstrataError as exc:
            log.warning("memstrata: flushing the memory at exit failed: %s", exc)
        _leave(exit_code)


def _leave(exit_code: int) -> None:
    """End the process now (no finalisation: see the module), its output flushed."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
            stream.flush()
    os._exit(exit_code)


# -- the bearer token ----------------------------------------------------------------------


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
