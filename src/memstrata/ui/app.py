"""The inspector's ASGI app (Starlette): routes, the request guard and errors.

Invariants:

* **Every request passes the guard** (``security.Guard``): the Host check,
  the token when one is required, and on every POST the CSRF field and the
  Origin. Responses carry a strict Content-Security-Policy (scripts, styles
  and images from the app only), ``nosniff``, no referrer to other sites, no caching.
* **Writes go through ``Memory``'s journaled verbs** (``supersede``,
  ``forget``, ``restore``), each durable when it returns; the page that
  confirms it is sent after that (303 to the fact's page). A write is only
  done on a POST that says ``confirmed=1``; without it the page asks first.
* **One request at a time touches the memory** (a lock): the UI is for one
  person, and ``Memory`` then never sees two calls of this process at once.
* **Files only through the path guard** (``pages.read_guarded``); a group's
  UI holds that group's ``Memory`` only, so it cannot name another group's
  facts or files.
* **It answers at once**: given an opener instead of a ``Memory``, it serves
  while the workspace opens on a thread (a 100k-fact workspace takes seconds):
  a request waits for it up to ``OPEN_WAIT_SECONDS`` (so the first page a
  browser asks for is usually the page, not a reload later), and is then
  answered "opening" (503, ``Retry-After: 1``, reloading itself) until it is open.
  What is not needed for a page waits until one was sent (``served``): the
  warm-up (the embedding model, the index in RAM) and the health check.
* A ``MemstrataError`` is an error page with its message and a status
  (400, 403, 404, 409, 503); anything else is a 500 page saying so, and its
  traceback goes to stderr, never to the page.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import (
    AccessDenied,
    BackendUnavailable,
    Conflict,
    InvalidInput,
    MemstrataError,
    NotFound,
    StorageError,
)
from ..memory import Memory
from .history import Timeline
from .pages import PER_PAGE, Pages
from .render import page
from .security import COOKIE, Guard
from .views import Views

__all__ = ["create_app"]

log = logging.getLogger("memstrata.ui")

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a form's Origin "null"
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_STATUS: list[tuple[type[MemstrataError], int]] = [
    (InvalidInput, 400),
    (AccessDenied, 403),
    (NotFound, 404),
    (Conflict, 409),
    (BackendUnavailable, 503),
    (StorageError, 503),
]
MAX_FORM_BYTES = 64 * 1024
# A request made while the workspace opens waits this long for it before it is
# answered "opening" (the page then reloads itself every second).
OPEN_WAIT_SECONDS = 2.0

Handler = Callable[[Request], Awaitable[Response]]


class _App:
    """The state behind the routes: the memory (once open), its views and the guard."""

    def __init__(self, source: Memory | Callable[[], Memory], guard: Guard) -> None:
        self.guard = guard
        self.lock = threading.Lock()
        self.memory: Memory | None = None
        self.views: Views | None = None
        self.failed: str | None = None
        self.opened = threading.Event()  # set once the workspace is open (or failed to)
        self.served = threading.Event()  # set once a page was sent
        if isinstance(source, Memory):
            self._ready(source)
        else:  # serve at once; pages say "opening" until the workspace is open
            threading.Thread(target=self._open, args=(source,), daemon=True).start()

    def _ready(self, memory: Memory) -> None:
        self.views = Views(memory, Pages(memory), Timeline(memory))
        self.memory = memory
        self.opened.set()

    def _open(self, opener: Callable[[], Memory]) -> None:
        try:
            self._ready(opener())
        except MemstrataError as exc:
            self.failed = str(exc)
            log.error("memstrata ui: cannot open the workspace: %s", exc)
        except Exception:
            self.failed = _INTERNAL
            log.exception("memstrata ui: cannot open the workspace")
        finally:
            self.opened.set()  # what waits for it stops waiting, opened or not

    def html(self, template: str, request: Request, code: int = 200, **data: Any) -> Response:
        memory = self.memory
        context = {
            "csrf": self.guard.csrf,
            "path": request.url.path,
            "group": (memory.workspace.group or "main") if memory else "…",
            "where": memory.workspace.where if memory else "",
            "read_only": memory.read_only if memory else True,
            "per_page": PER_PAGE,
            "params": dict(request.query_params),
            "qs": _qs,
            **data,
        }
        return HTMLResponse(page(template, **context), status_code=code, headers=_HEADERS)

    def error(self, request: Request, exc: MemstrataError) -> Response:
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
        return self.html("error.html", request, status, title="Error", message=str(exc))

    async def not_ready(self, request: Request) -> Response | None:
        """The page to show while the workspace opens (or why it did not), else
        None; a request waits up to ``OPEN_WAIT_SECONDS`` for it to open first."""
        if self.views is None and self.failed is None:
            await run_in_threadpool(self.opened.wait, OPEN_WAIT_SECONDS)
        if self.views is not None:
            return None
        if self.failed is not None:
            return self.html("error.html", request, 503, title="Error", message=self.failed)
        response = self.html("opening.html", request, 503, title="Opening")
        response.headers["Retry-After"] = "1"
        return response

    def route(self, name: str) -> Handler:
        """A GET endpoint: view ``name`` (``Views``) gives the template and its data."""

        async def endpoint(request: Request) -> Response:
            refused = self.refuse(request) or await self.not_ready(request)
            if refused is not None:
                return refused
            params = dict(request.query_params)
            view = getattr(self.views, name)
            try:
                template, data = await run_in_threadpool(
                    self._locked, view, params, **request.path_params
                )
                response = self.html(template, request, **data)
                response.background = BackgroundTask(self._sent, name)
                return response
            except MemstrataError as exc:
                return self.error(request, exc)
            except Exception:
                log.exception("internal error in %s", request.url.path)
                return self.html("error.html", request, 500, title="Error", message=_INTERNAL)

        return endpoint

    def action(self, name: str) -> Handler:
        """A POST endpoint: verb ``name`` (``Views``) writes and names the page to go to."""

        async def endpoint(request: Request) -> Response:
            refused = self.refuse(request) or await self.not_ready(request)
            if refused is not None:
                return refused
            verb = getattr(self.views, name)
            body = await _bounded_body(request)
            if body is None:
                return self.error(request, InvalidInput("the form is too large"))
            form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
            if not self.guard.csrf_ok(form.get("csrf")) or not self.guard.origin_ok(
                request.headers.get("origin"), request.headers.get("host")
            ):
                return self.error(request, AccessDenied("the form's CSRF check failed; reload"))
            if form.get("confirmed") != "1":
                target = request.url.path
                current = await run_in_threadpool(
                    self._locked, self._text_of, request.path_params.get("item_id", "")
                )
                return self.html(
                    "confirm.html",
                    request,
                    title="Confirm",
                    form=form,
                    target=target,
                    current=current,
                )
            try:
                where = await run_in_threadpool(self._locked, verb, form, **request.path_params)
            except MemstrataError as exc:
                return self.error(request, exc)
            except Exception:
                log.exception("internal error in %s", request.url.path)
                return self.html("error.html", request, 500, title="Error", message=_INTERNAL)
            return RedirectResponse(where, status_code=303, headers=_HEADERS)

        return endpoint

    def refuse(self, request: Request) -> Response | None:
        """A response refusing ``request``, or None to serve it (see ``Guard``)."""
        if not self.guard.host_allowed(request.headers.get("host")):
            return PlainTextResponse("unknown Host", status_code=421, headers=_HEADERS)
        offered = request.query_params.get("token")
        if offered is not None and self.guard.token_ok(offered):
            clean = {k: v for k, v in request.query_params.items() if k != "token"}
            target = request.url.path + (f"?{urlencode(clean)}" if clean else "")
            response = RedirectResponse(target, status_code=303, headers=_HEADERS)
            if self.guard.token is not None:
                response.set_cookie(COOKIE, offered, httponly=True, samesite="strict")
            return response
        sent = request.cookies.get(COOKIE) or _bearer(request.headers.get("authorization"))
        if not self.guard.token_ok(sent):
            return PlainTextResponse(
                "a token is required: open the address `memstrata ui` printed",
                status_code=401,
                headers=_HEADERS,
            )
        return None

    def _sent(self, name: str) -> None:
        """After page ``name`` was sent: the Overview's health check when due, and
        ``served`` (what waits for the first page, such as the warm-up, may start)."""
        if name == "overview" and self.views is not None:
            self.views.health.due()
        self.served.set()

    def _text_of(self, item_id: str) -> str:
        """The fact's text, for the confirmation ("" when there is none)."""
        assert self.views is not None
        try:
            return self.views.pages.fact(item_id)[0].text
        except MemstrataError:
            return ""

    def _locked(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return call(*args, **kwargs)


_INTERNAL = "internal error; the server's log has the details (please report it)"


async def _bounded_body(request: Request) -> bytes | None:
    """The request's body, or None past ``MAX_FORM_BYTES`` (read no further)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _bearer(header: str | None) -> str | None:
    if header and header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


def _qs(params: dict[str, Any], **changes: Any) -> str:
    """``params`` with ``changes`` as a query string (empty values dropped)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def create_app(memory: Memory | Callable[[], Memory], guard: Guard | None = None) -> Starlette:
    """The inspector for ``memory``, or for what ``memory()`` opens on a thread
    (the pages say "opening" until then); ``guard`` defaults to loopback only."""
    app = _App(memory, guard or Guard("127.0.0.1"))
    static = StaticFiles(directory=str(files("memstrata.ui").joinpath("static")))
    routes = [
        Route("/", app.route("overview")),
        Route("/facts", app.route("facts")),
        Route("/facts/{item_id}", app.route("fact")),
        Route("/facts/{item_id}/correct", app.action("correct"), methods=["POST"]),
        Route("/facts/{item_id}/forget", app.action("forget"), methods=["POST"]),
        Route("/facts/{item_id}/restore", app.action("restore"), methods=["POST"]),
        Route("/search", app.route("search")),
        Route("/sessions", app.route("sessions")),
        Route("/sessions/{session:path}", app.route("session")),
        Route("/layers", app.route("layers")),
        Route("/file", app.route("file")),
        Route("/notes/{name}", app.route("note")),
        Mount("/static", app=static, name="static"),
    ]
    starlette = Starlette(routes=routes)
    starlette.state.inspector = app
    return starlette
