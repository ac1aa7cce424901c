"""``memstrata ui``: a local web inspector of one workspace (issue 20).

Server-rendered pages (Starlette + Jinja2, served by uvicorn) with a little
progressive enhancement (``static/ui.js``: keyboard navigation); every
template and asset is package data, nothing is fetched from elsewhere.

Pages: Overview (counts, a chart per day, compactions, ``doctor``'s health),
Facts (filters, pagination, each fact's history, correct/forget/restore),
Search (citations that open the file at its lines, a "why" panel from
``index.why``), Sessions (transcripts with their parts, state, summaries,
audit log, compaction points) and Layers (the files rendered as Markdown,
backlinks, and ``build_context`` as a stacked bar of the budget).

Invariants (each module states its own):

* Served on 127.0.0.1 unless told otherwise; beyond loopback only with a
  token (``security``). Every form is CSRF-protected; every path a person
  names goes through the path guard.
* The UI never writes a file itself: it calls ``Memory``'s journaled verbs,
  and confirms a change only after the verb returned (durable).
* A group's UI holds that group's ``Memory`` only.

Needs ``memstrata[ui]`` (jinja2, starlette, uvicorn).
"""

from __future__ import annotations

import sys
import threading
import webbrowser
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..errors import InvalidInput, MemstrataError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ..memory import Memory

__all__ = ["INSTALL_HINT", "create_app", "require", "serve"]

INSTALL_HINT = "the web UI needs jinja2, starlette and uvicorn: pip install 'memstrata[ui]'"


def require() -> None:
    """``InvalidInput`` with the install hint when the UI's libraries are missing."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InvalidInput(INSTALL_HINT) from None


def create_app(memory: Memory, *, host: str = "127.0.0.1", token: str | None = None) -> Starlette:
    """The inspector's ASGI app for ``memory`` (see ``ui.app``)."""
    require()
    from .app import create_app as build
    from .security import Guard, check_bind

    return build(memory, Guard(host, check_bind(host, token)))


def serve(
    memory: Memory,
    *,
    host: str = "127.0.0.1",
    port: int = 8766,
    token: str | None = None,
    open_browser: bool = True,
    allowed: Iterable[str] = (),
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the inspector until interrupted (Ctrl-C / SIGTERM)."""
    require()
    import uvicorn

    from .app import create_app as build
    from .security import Guard, check_bind

    required = check_bind(host, token)
    app = build(memory, Guard(host, required, allowed))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    url = f"http://{shown}:{port}/" + (f"?token={required}" if required else "")
    threading.Thread(target=_warm, args=(memory,), name="memstrata-ui-warm", daemon=True).start()
    (announce or _print)(f"memstrata ui: serving {memory.workspace.where} on {url}")
    if open_browser:
        threading.Timer(0.3, lambda: webbrowser.open(url)).start()
    try:
        server.run()
    except OSError as exc:
        raise InvalidInput(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


def _warm(memory: Memory) -> None:
    """Bring the search index up to date in the background (the first search need not)."""
    try:
        memory.reindex(warm=True)
    except MemstrataError as exc:
        print(f"memstrata ui: the search index could not be warmed: {exc}", file=sys.stderr)


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
