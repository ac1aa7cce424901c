"""Bearer tokens of the memory service (``memstrata serve --database``): each
names one tenant (group); the database keeps only a digest of it.

* **A token** is ``mst_`` and 43 characters of ``secrets.token_urlsafe(32)``:
  256 random bits, shown once by ``add`` and never stored. The row keeps
  ``digest_of(token)``, SHA-256 over a fixed domain prefix and the token. A
  per-token salt or a slow hash (scrypt) defends a guessable secret against
  precomputed tables and brute force; a 256-bit random token is neither
  guessable nor precomputable, and an unsalted digest is what lets the
  service find a token by its digest in one indexed read, without knowing
  the tenant first. A stolen table gives no token.
* **Finding the tenant without knowing it** (``tenant_of``): the transaction
  sets ``memstrata.token_digest`` (``schema.TOKEN_DIGEST_SETTING``) to the
  presented token's digest; the table's read-only ``by_digest`` policy shows
  that one row, unless revoked. No tenant is set, so the tenant policy shows
  nothing else, and a query without the setting sees no token of any tenant
  (``schema``). The digest read back is compared in constant time.
* **Listing and revoking** run as the tenant (its policy): a tenant sees and
  revokes its own tokens only; ``list`` never reads the digest. A token is
  revoked by setting ``revoked_at`` (kept for the record, never deleted);
  ``revoke`` takes the id or a unique prefix of it (at least
  ``MIN_PREFIX`` characters).
* Group names are those of file workspaces (``access.check_group``), so a
  tenant served here is also a group a workspace can hold.
"""

from __future__ import annotations

import builtins  # `list` below is the verb; the type is builtins.list
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import Conflict, InvalidInput, NotFound
from ..storage.access import check_group
from .connect import Database
from .schema import TOKEN_DIGEST_SETTING

__all__ = [
    "MIN_PREFIX",
    "PREFIX",
    "Token",
    "add",
    "digest_of",
    "list",
    "revoke",
    "tenant_of",
]

PREFIX = "mst_"
MIN_PREFIX = 4
MAX_LABEL = 200
_SECRET_BYTES = 32
_TOKEN_CHARS = len(PREFIX) + 43  # token_urlsafe(32): 43 characters
_DOMAIN = b"memstrata service token v1\x00"
_ID_ATTEMPTS = 5


@dataclass(frozen=True)
class Token:
    """What is known of a token besides its secret."""

    id: str
    group: str
    label: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "group": self.group,
            "label": self.label,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def digest_of(token: str) -> str:
    """The stored form of ``token`` (hex SHA-256 over a domain prefix)."""
    return hashlib.sha256(_DOMAIN + token.encode("utf-8", "surrogatepass")).hexdigest()


def _well_formed(token: object) -> bool:
    return (
        isinstance(token, str)
        and len(token) == _TOKEN_CHARS
        and token.startswith(PREFIX)
        and token.isascii()
    )


def _label(label: str) -> str:
    if not isinstance(label, str) or "\x00" in label or len(label) > MAX_LABEL:
        raise InvalidInput(f"a token's label must be text of at most {MAX_LABEL} characters")
    return label.strip()


def add(db: Database, group: str, label: str = "") -> tuple[str, str]:
    """A new token for ``group``: ``(id, token)``. The token is shown here
    once; only its digest is kept."""
    check_group(group)
    label = _label(label)
    token = PREFIX + secrets.token_urlsafe(_SECRET_BYTES)
    with db.transaction(group, "add a service token") as conn:
        for _ in range(_ID_ATTEMPTS):
            token_id = secrets.token_hex(6)
            row = conn.execute(
                "INSERT INTO memstrata_tokens (id, tenant, digest, label) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                (token_id, group, digest_of(token), label),
            ).fetchone()
            if row is not None:
                return token_id, token
    raise Conflict("could not find a free token id; try again")  # pragma: no cover - 48 bits


def list(db: Database, group: str) -> builtins.list[Token]:
    """The tokens of ``group``, oldest first, revoked ones too (never a secret)."""
    check_group(group)
    with db.transaction(group, "list service tokens") as conn:
        rows = conn.execute(
            "SELECT id, tenant, label, created_at, revoked_at FROM memstrata_tokens "
            "ORDER BY created_at, id"
        ).fetchall()
    return [Token(*row) for row in rows]


def revoke(db: Database, group: str, ref: str) -> Token:
    """Revoke the token of ``group`` whose id is ``ref`` or starts with it
    (``InvalidInput`` for a prefix too short or naming several, ``NotFound``
    for none). Revoking a revoked token changes nothing."""
    check_group(group)
    ref = ref.strip() if isinstance(ref, str) else ""
    if len(ref) < MIN_PREFIX or not all(char in "0123456789abcdef" for char in ref.lower()):
        raise InvalidInput(
            f"give a token id (or at least {MIN_PREFIX} of its first characters), "
            "as `memstrata tokens list` shows it"
        )
    pattern = ref.lower() + "%"
    with db.transaction(group, "revoke a service token") as conn:
        found = conn.execute(
            "SELECT id FROM memstrata_tokens WHERE id LIKE %s FOR UPDATE", (pattern,)
        ).fetchall()
        if not found:
            raise NotFound(f"group {group!r} has no token {ref!r}")
        if len(found) > 1:
            ids = ", ".join(sorted(row[0] for row in found))
            raise InvalidInput(f"{ref!r} names several tokens of {group!r} ({ids}): give more")
        row = conn.execute(
            "UPDATE memstrata_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = %s "
            "RETURNING id, tenant, label, created_at, revoked_at",
            (found[0][0],),
        ).fetchone()
    assert row is not None  # locked above, in this transaction
    return Token(*row)


def tenant_of(db: Database, token: str) -> str | None:
    """The group ``token`` serves, or None (unknown, revoked, malformed)."""
    if not _well_formed(token):
        return None
    digest = digest_of(token)
    with db.transaction(None, "check a service token") as conn:
        conn.execute("SELECT set_config(%s, %s, true)", (TOKEN_DIGEST_SETTING, digest))
        row = conn.execute(
            "SELECT tenant, digest FROM memstrata_tokens WHERE digest = %s", (digest,)
        ).fetchone()
    if row is None or not hmac.compare_digest(str(row[1]), digest):
        return None
    return str(row[0])
