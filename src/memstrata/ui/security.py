"""Who may talk to the inspector: the Host check, the access token and CSRF.

Invariants:

* **Loopback by default.** Bound to a loopback address, only requests whose
  ``Host`` names a loopback address (``127.0.0.1``, ``localhost``, ``[::1]``)
  or an ``allowed`` name are served: a page on another site cannot reach the
  inspector by DNS rebinding. Bound beyond loopback, a ``token`` is required
  (``check_bind``) and every request must carry it: ``?token=`` once (it is
  then kept in an HttpOnly, SameSite=Strict cookie and the address loses it),
  the cookie, or ``Authorization: Bearer``.
* **Every form is CSRF-protected**: a POST is served only with a ``csrf``
  field equal to this server's secret (compared in constant time), which only
  pages it served contain, and, when the browser sends ``Origin``, with an
  ``Origin`` of this server's own host.
* Tokens and secrets are compared with ``hmac.compare_digest``; no response
  echoes a token.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..errors import InvalidInput

__all__ = ["COOKIE", "Guard", "check_bind", "is_loopback"]

COOKIE = "memstrata_ui_token"
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> str | None:
    """The token to require (stripped; None on loopback without one);
    ``InvalidInput`` when binding beyond loopback without one or with an empty one."""
    if token is not None:
        token = token.strip()
        if not token:
            raise InvalidInput("the UI token is empty; give a secret, or none on loopback")
    if token is None and not is_loopback(host):
        raise InvalidInput(
            f"refusing to serve the UI on {host} without a token: only loopback is served "
            "without one (--token or $MEMSTRATA_UI_TOKEN)"
        )
    return token


@dataclass
class Guard:
    """The checks every request passes (see the module)."""

    host: str
    token: str | None = None
    allowed: Iterable[str] = ()
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def __post_init__(self) -> None:
        self._names = {name.lower() for name in self.allowed} | set(_LOOPBACK_NAMES)
        if not is_loopback(self.host):
            self._names.add(self.host.lower())

    def host_allowed(self, header: str | None) -> bool:
        """Whether the ``Host`` header names this server (any port)."""
        if not header:
            return False
        if self.token is not None and not is_loopback(self.host) and self.host in ("0.0.0.0", "::"):
            return True  # every address, and the token keeps strangers out
        name = urlsplit(f"//{header}").hostname or ""
        return name.lower() in self._names or f"[{name}]" in self._names

    def token_ok(self, offered: str | None) -> bool:
        """Whether ``offered`` is the token (always true when none is required)."""
        if self.token is None:
            return True
        return offered is not None and hmac.compare_digest(offered.encode(), self.token.encode())

    def csrf_ok(self, offered: str | None) -> bool:
        """Whether a form's ``csrf`` field is this server's secret."""
        return offered is not None and hmac.compare_digest(offered.encode(), self.csrf.encode())

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """Whether a POST's ``Origin`` (when the browser sent one) is this server."""
        if origin is None:
            return True
        return bool(host) and urlsplit(origin).netloc.lower() == (host or "").lower()
