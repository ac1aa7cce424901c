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
* ``serve``'s process freezes what it holds once the workspace is open and
  again once warm (``settle``): no page pays for a full garbage collection.

Needs ``memstrata[ui]`` (jinja2, starlette, uvicorn).
"""

from __future__ import annotations

import gc
import sys
import threading
import time
import webbrowser
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..errors import InvalidInput, MemstrataError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ..memory import Memory

__all__ = ["INSTALL_HINT", "create_app", "require", "serve", "settle", "warm"]

# The warm-up waits this long for the first page to be asked for and sent.
WARM_AFTER_SECONDS = 3.0
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
    memory: Memory | Callable[[], Memory],
    *,
    host: str = "127.0.0.1",
    port: int = 8766,
    token: str | None = None,
    open_browser: bool = True,
    allowed: Iterable[str] = (),
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the inspector until interrupted (Ctrl-C / SIGTERM). Given an
    opener instead of a ``Memory``, it answers at once and opens the workspace
    on a thread (and closes it at the end)."""
    require()
    import uvicorn

    from ..memory import Memory
    from .app import create_app as build
    from .security import Guard, check_bind

    required = check_bind(host, token)
    opened: list[Memory] = []
    source = memory
    if not isinstance(memory, Memory):
        opener = memory

        def opening() -> Memory:
            # No collection while the workspace opens: the facts it reads (100k
            # objects at 100k facts) are frozen before any collection scans them.
            collecting = gc.isenabled()
            gc.disable()
            try:
                opened.append(opener())
                settle()
            finally:
                if collecting:
                    gc.enable()
            return opened[-1]

        source = opening
    app = build(source, Guard(host, required, allowed))
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="off", ws="none"
    )  # no websockets: the pages do not use them (importing them costs 40 ms)
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    url = f"http://{shown}:{port}/" + (f"?token={required}" if required else "")
    threading.Thread(target=_warm, args=(app,), name="memstrata-ui-warm", daemon=True).start()
    (announce or _print)(f"memstrata ui: serving on {url}")
    if open_browser:
        threading.Timer(0.3, lambda: webbrowser.open(url)).start()
    try:
        server.run()
    except OSError as exc:
        raise InvalidInput(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    finally:
        views = app.state.inspector.views
        if views is not None:
            views.health.stop()  # a doctor still reading every file ends with the server
        for memory_opened in opened:
            memory_opened.close()


def warm(memory: Memory) -> None:
    """What a first search and a first context would build, built now: the index
    brought up to date and kept in RAM, one search, the facts' ranker of
    ``build_context``; then ``settle()``."""
    try:
        memory.reindex(warm=True)
        memory.search("warm up", k=1)  # the query path: its embedder, MEMORY.md's lines
        memory.build_context("warm up", budget_tokens=100)
    except MemstrataError as exc:
        print(f"memstrata ui: could not warm the search index: {exc}", file=sys.stderr)
    settle()


def settle() -> None:
    """What the process holds now (the facts, the index in RAM: 700k objects at
    100k facts) is moved out of the garbage collector's reach (``gc.freeze``):
    a full collection scanned all of it, 350 ms in the middle of whichever page
    set it off. It is for the server's process: what is frozen is never freed
    by the collector (what refcounting frees is freed as ever)."""
    gc.freeze()


def _warm(app: Starlette) -> None:
    """Once the workspace is open and the first page was sent (or nobody asked
    for one in ``WARM_AFTER_SECONDS``): ``warm`` and the first health check. Not
    before: on two cores both would slow the first page down (the embedding
    model alone takes most of a second to load)."""
    inspector = app.state.inspector
    while inspector.memory is None and inspector.failed is None:
        time.sleep(0.05)
    if inspector.memory is not None:
        inspector.served.wait(WARM_AFTER_SECONDS)
        warm(inspector.memory)
        if inspector.memory.workspace.volume.local is not None:
            inspector.views.health.due()  # the first check, before anyone asks


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
