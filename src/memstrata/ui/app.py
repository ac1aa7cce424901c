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
* A ``MemstrataError`` is an error page with its message and a status
  (400, 403, 404, 409, 503); anything else is a 500 page saying so, and its
  traceback goes to stderr, never to the page.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
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

Handler = Callable[[Request], Awaitable[Response]]


class _App:
    """The state behind the routes: the memory, its pages and the guard."""

    def __init__(self, memory: Memory, guard: Guard) -> None:
        self.memory = memory
        self.guard = guard
        self.lock = threading.Lock()
        self.views = Views(memory, Pages(memory), Timeline(memory))

    def html(self, template: str, request: Request, code: int = 200, **data: Any) -> Response:
        context = {
            "csrf": self.guard.csrf,
            "path": request.url.path,
            "group": self.memory.workspace.group or "main",
            "where": self.memory.workspace.where,
            "read_only": self.memory.read_only,
            "per_page": PER_PAGE,
            "params": dict(request.query_params),
            "qs": _qs,
            **data,
        }
        return HTMLResponse(page(template, **context), status_code=code, headers=_HEADERS)

    def error(self, request: Request, exc: MemstrataError) -> Response:
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
        return self.html("error.html", request, status, title="Error", message=str(exc))

    def route(self, view: Callable[..., tuple[str, dict[str, Any]]]) -> Handler:
        """A GET endpoint: ``view(params, **path_params)`` gives the template and its data."""

        async def endpoint(request: Request) -> Response:
            refused = self.refuse(request)
            if refused is not None:
                return refused
            params = dict(request.query_params)
            try:
                template, data = await run_in_threadpool(
                    self._locked, view, params, **request.path_params
                )
                return self.html(template, request, **data)
            except MemstrataError as exc:
                return self.error(request, exc)
            except Exception:
                log.exception("internal error in %s", request.url.path)
                return self.html("error.html", request, 500, title="Error", message=_INTERNAL)

        return endpoint

    def action(self, verb: Callable[..., str]) -> Handler:
        """A POST endpoint: ``verb(form, **path_params)`` writes and names the page to go to."""

        async def endpoint(request: Request) -> Response:
            refused = self.refuse(request)
            if refused is not None:
                return refused
            body = await request.body()
            if len(body) > MAX_FORM_BYTES:
                return self.error(request, InvalidInput("the form is too large"))
            form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
            if not self.guard.csrf_ok(form.get("csrf")) or not self.guard.origin_ok(
                request.headers.get("origin"), request.headers.get("host")
            ):
                return self.error(request, AccessDenied("the form's CSRF check failed; reload"))
            if form.get("confirmed") != "1":
                target = request.url.path
                return self.html("confirm.html", request, title="Confirm", form=form, target=target)
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

    def _locked(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return call(*args, **kwargs)


_INTERNAL = "internal error; the server's log has the details (please report it)"


def _bearer(header: str | None) -> str | None:
    if header and header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


def _qs(params: dict[str, Any], **changes: Any) -> str:
    """``params`` with ``changes`` as a query string (empty values dropped)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def create_app(memory: Memory, guard: Guard | None = None) -> Starlette:
    """The inspector for ``memory`` (see the module); ``guard`` defaults to loopback only."""
    app = _App(memory, guard or Guard("127.0.0.1"))
    views = app.views
    static = StaticFiles(directory=str(files("memstrata.ui").joinpath("static")))
    routes = [
        Route("/", app.route(views.overview)),
        Route("/facts", app.route(views.facts)),
        Route("/facts/{item_id}", app.route(views.fact)),
        Route("/facts/{item_id}/correct", app.action(views.correct), methods=["POST"]),
        Route("/facts/{item_id}/forget", app.action(views.forget), methods=["POST"]),
        Route("/facts/{item_id}/restore", app.action(views.restore), methods=["POST"]),
        Route("/search", app.route(views.search)),
        Route("/sessions", app.route(views.sessions)),
        Route("/sessions/{session}", app.route(views.session)),
        Route("/layers", app.route(views.layers)),
        Route("/file", app.route(views.file)),
        Route("/notes/{name}", app.route(views.note)),
        Mount("/static", app=static, name="static"),
    ]
    starlette = Starlette(routes=routes)
    starlette.state.started = datetime.now(UTC)
    return starlette
