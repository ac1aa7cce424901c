"""``memstrata serve --database``: one memory service for many tenants (issue
15, item 5). Bearer tokens from the real test PostgreSQL name the tenant;
each tenant's memory comes from an injectable opener (file workspaces under a
temporary root here, until ``Memory.open(url)`` is wired: one test uses it
and is expected to fail until then)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the mcp SDK's HTTP client is not installed")

import postgres_server  # noqa: E402
from memstrata import Memory, __version__  # noqa: E402
from memstrata.errors import (  # noqa: E402
    AccessDenied,
    BackendUnavailable,
    InvalidInput,
)
from memstrata.mcp_server.service import Service, open_by_url  # noqa: E402
from memstrata.mcp_server.tenants import Tenants, acting_group  # noqa: E402
from memstrata.postgres import tokens  # noqa: E402
from memstrata.postgres.connect import Database  # noqa: E402
from test_mcp import _free_port, _text  # noqa: E402

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def db(postgres_url: str) -> Iterator[Database]:
    database = Database(postgres_url, max_size=4)
    yield database
    database.close()


@dataclass
class Served:
    """A service running in this process (uvicorn on a thread)."""

    port: int
    app: Service
    opened: list[tuple[str, Memory]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def _opener(root: Path, opened: list[tuple[str, Memory]]) -> Callable[[str], Memory]:
    def open_memory(group: str) -> Memory:
        memory = Memory.open(root, group, embedder="none")
        opened.append((group, memory))
        return memory

    return open_memory


def _start(app: Service) -> tuple[int, Any, threading.Thread]:
    import uvicorn

    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise AssertionError("the service did not start")
        time.sleep(0.02)
    return port, server, thread


@pytest.fixture
def served(tmp_path: Path, db: Database) -> Iterator[Served]:
    opened: list[tuple[str, Memory]] = []
    app = Service(db, Tenants(_opener(tmp_path / "root", opened)))
    port, server, thread = _start(app)
    try:
        yield Served(port, app, opened)
    finally:
        server.should_exit = True
        thread.join(30)
        app.tenants.close()


def _rpc(
    port: int, token: str | None, method: str, params: dict[str, Any] | None = None
) -> httpx2.Response:
    headers = dict(ACCEPT)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return httpx2.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=60)


def _call(port: int, token: str, tool: str, **arguments: Any) -> tuple[bool, str]:
    """(is_error, text) of one tool call, sent raw (stateless: no session needed)."""
    response = _rpc(port, token, "tools/call", {"name": tool, "arguments": arguments})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return bool(result.get("isError")), "".join(part["text"] for part in result["content"])


def _group() -> str:
    return postgres_server.tenant("t")


# -- tokens at the door --------------------------------------------------------------------


def test_health_needs_no_token(served: Served) -> None:
    response = httpx2.get(f"http://127.0.0.1:{served.port}/health", timeout=30)
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__, "database": "ok"}


def test_a_missing_unknown_or_revoked_token_is_a_401_in_json(served: Served, db: Database) -> None:
    group = _group()
    token_id, token = tokens.add(db, group)
    assert _rpc(served.port, token, "tools/list").status_code == 200
    tokens.revoke(db, group, token_id)
    unknown = tokens.PREFIX + "x" * 43
    for given in (None, "mst_", unknown, token, token[:-1]):
        response = _rpc(served.port, given, "tools/list")
        assert response.status_code == 401, (given, response.text)
        assert response.json()["error"] == "invalid_token"
        assert response.headers["www-authenticate"].startswith("Bearer")
    basic = httpx2.post(
        served.url, json={}, headers={**ACCEPT, "Authorization": f"Basic {token}"}, timeout=30
    )
    assert basic.status_code == 401
    assert served.opened == []  # no memory opened for a refused request


def test_a_token_revoked_mid_session_is_refused_from_its_next_request(
    served: Served, db: Database
) -> None:
    group = _group()
    token_id, token = tokens.add(db, group)
    assert _call(served.port, token, "memory_write", text="Tea at four")[0] is False
    tokens.revoke(db, group, token_id)
    assert _rpc(served.port, token, "tools/list").status_code == 401


@pytest.mark.parametrize(
    ("authorization", "token"),
    [
        (b"Bearer mst_abc", "mst_abc"),
        (b"bearer   mst_abc  ", "mst_abc"),  # the scheme in any case (RFC 7235)
        (b"Bearer ", None),
        (b"Bearer", None),
        (b"Basic mst_abc", None),
        (b"mst_abc", None),
    ],
)
def test_the_bearer_token_of_a_request(authorization: bytes, token: str | None) -> None:
    from memstrata.mcp_server.service import bearer_of

    assert bearer_of({"headers": [(b"authorization", authorization)]}) == token
    assert bearer_of({"headers": []}) is None


# -- tenants apart, through the official client ---------------------------------------------


async def _session(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    out: list[Any] = []
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        out.append(sorted(tool.name for tool in (await session.list_tools()).tools))
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            out.append((result.is_error, _text(result)))
    return out


def test_two_tenants_through_the_official_client_never_see_each_other(
    served: Served, db: Database
) -> None:
    import anyio

    ann, bob = _group(), _group()
    _, ann_token = tokens.add(db, ann)
    _, bob_token = tokens.add(db, bob)
    names, wrote, found = anyio.run(
        _session,
        served.url,
        ann_token,
        [
            ("memory_write", {"text": "The vault code is 4242"}),
            ("memory_search", {"query": "vault code"}),
        ],
    )
    from memstrata.tools import TOOL_NAMES

    assert names == sorted(TOOL_NAMES)
    assert wrote[0] is False and "4242" in found[1]
    fact_id = json.loads(wrote[1])["id"]
    _, *bob_sees = anyio.run(
        _session,
        served.url,
        bob_token,
        [
            ("memory_write", {"text": "The office plant is a fern"}),
            ("memory_search", {"query": "vault code 4242"}),
            ("memory_get", {"path": "MEMORY.md"}),
            ("memory_status", {}),
            ("memory_search", {"query": "vault", "group": ann}),
            ("memory_get", {"path": "MEMORY.md", "group": ann}),
            ("memory_write", {"text": "Planted by bob", "group": ann}),
            ("memory_forget", {"id": fact_id}),
        ],
    )
    (_, _), (search_error, search), (_, memory_md), (_, status), *refused = bob_sees
    assert search_error is False and "4242" not in search
    assert "4242" not in memory_md and "fern" in memory_md
    assert json.loads(status)["items"] == 1
    for is_error, text in refused:
        assert is_error is True and text.startswith("Error:"), text
        assert "4242" not in text
    assert "may not read" in refused[0][1] and "may not write" in refused[2][1]
    _, (_, again) = anyio.run(
        _session, served.url, ann_token, [("memory_search", {"query": "vault code"})]
    )
    assert "4242" in again and "Planted" not in again  # ann's fact intact, nothing of bob's
    assert sorted(group for group, _ in served.opened) == sorted([ann, bob])


def test_both_servers_offer_the_same_tools(served: Served, tmp_path: Path) -> None:
    import anyio

    from memstrata.mcp_server import build_server

    async def listed(server: Any) -> list[dict[str, Any]]:
        return [tool.model_dump() for tool in await server.list_tools()]

    with Memory.open(tmp_path / "one", embedder="none") as memory:
        single = anyio.run(listed, build_server(memory))
    assert anyio.run(listed, served.app.server) == single


def test_the_global_group_is_readable_and_no_other(
    tmp_path: Path, db: Database, served: Served
) -> None:
    group = _group()
    _, token = tokens.add(db, group)
    with Memory.open(tmp_path / "root", "global", embedder="none") as shared:
        shared.remember("Office hours are 9 to 5")
    error, text = _call(served.port, token, "memory_search", query="office hours", group="global")
    assert error is False and "9 to 5" in text
    error, text = _call(served.port, token, "memory_write", text="x", group="global")
    assert error is True and "may not write" in text


# -- the tenants' memories -----------------------------------------------------------------


def test_a_tenant_memory_opens_once_under_concurrent_calls_and_closes_at_the_end(
    tmp_path: Path, db: Database
) -> None:
    opened: list[tuple[str, Memory]] = []
    app = Service(db, Tenants(_opener(tmp_path / "root", opened)))
    port, server, thread = _start(app)
    group = _group()
    _, token = tokens.add(db, group)
    try:
        results: list[tuple[bool, str]] = []
        workers = [
            threading.Thread(
                target=lambda n=n: results.append(
                    _call(port, token, "memory_write", text=f"Note number {n}")
                )
            )
            for n in range(8)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        server.should_exit = True
        thread.join(30)
    assert [error for error, _ in results] == [False] * 8
    assert [name for name, _ in opened] == [group]
    app.tenants.close()
    assert all(memory.engine.closed for _, memory in opened)
    with Memory.open(tmp_path / "root", group, embedder="none") as memory:
        assert {item.text for item in memory.list()} == {f"Note number {n}" for n in range(8)}
    with pytest.raises(BackendUnavailable, match="shutting down"):  # noqa: SIM117
        with app.tenants.lease(group):
            pass


class _Fake:
    def __init__(self, group: str) -> None:
        self.group, self.closed = group, False

    def close(self) -> None:
        self.closed = True


def test_tenants_close_the_least_recently_used_idle_memory_beyond_the_cap() -> None:
    made: dict[str, _Fake] = {}

    def open_fake(group: str) -> Any:
        made[group] = _Fake(group)
        return made[group]

    tenants = Tenants(open_fake, max_open=2)
    for group in ("a", "b"):
        with tenants.lease(group):
            pass
    with tenants.lease("a"), tenants.lease("c"):  # a is used again: b is the oldest
        assert made["b"].closed and not made["a"].closed
        with tenants.lease("d"):  # over the cap, but a, c, d are all in use
            assert not any(made[g].closed for g in "acd")
    assert sum(not fake.closed for fake in made.values()) == 2
    tenants.close()
    assert all(fake.closed for fake in made.values())


def test_a_failed_open_is_tried_again() -> None:
    attempts: list[str] = []

    def flaky(group: str) -> Any:
        attempts.append(group)
        if len(attempts) == 1:
            raise BackendUnavailable("the database is restarting")
        return _Fake(group)

    tenants = Tenants(flaky)
    with pytest.raises(BackendUnavailable):  # noqa: SIM117
        with tenants.lease("a"):
            pass
    with tenants.lease("a") as memory:
        assert isinstance(memory, _Fake)
    assert attempts == ["a", "a"] and tenants.open_count() == 1


def test_which_group_a_call_acts_on() -> None:
    assert acting_group("a", None, write=True, main=None) == "a"
    assert acting_group("a", "a", write=True, main=None) == "a"
    assert acting_group("a", "global", write=False, main=None) == "global"
    for target, write in (("global", True), ("b", False), ("b", True)):
        with pytest.raises(AccessDenied):
            acting_group("a", target, write=write, main=None)
    assert acting_group("boss", "b", write=True, main="boss") == "b"
    assert acting_group("boss", "global", write=True, main="boss") == "global"
    with pytest.raises(AccessDenied):
        acting_group("a", "b", write=False, main="boss")
    with pytest.raises(InvalidInput):
        acting_group("a", "../b", write=False, main=None)


def test_a_main_group_and_a_cap_are_checked_at_start(db: Database, tmp_path: Path) -> None:
    for main in ("global", "Not A Group"):
        with pytest.raises(InvalidInput):
            Service(db, Tenants(_opener(tmp_path, [])), main_group=main)
    with pytest.raises(InvalidInput):
        Tenants(_opener(tmp_path, []), max_open=0)


# -- logs, health, a database that is down -------------------------------------------------


def test_one_json_line_per_request_and_never_a_token_or_a_text(
    served: Served, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    group = _group()
    _, token = tokens.add(db, group)
    with caplog.at_level(logging.INFO, logger="memstrata.requests"):
        assert _call(served.port, token, "memory_write", text="The vault code is 4242")[0] is False
        assert _call(served.port, token, "memory_forget", id="nope")[0] is True
        assert _rpc(served.port, "mst_wrong", "tools/list").status_code == 401

        def logged() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.name == "memstrata.requests"]

        deadline = time.monotonic() + 30  # a line is written once its answer is sent
        while len(logged()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    lines = logged()
    records = [json.loads(line) for line in lines]
    keys = {"time", "tenant", "method", "path", "tool", "status", "refused", "ms"}
    assert len(records) == 3 and all(set(record) == keys for record in records)
    wrote, forgot, refused = records
    assert (wrote["tenant"], wrote["tool"], wrote["status"], wrote["refused"]) == (
        group,
        "memory_write",
        200,
        False,
    )
    assert (forgot["tool"], forgot["refused"]) == ("memory_forget", True)
    assert (refused["tenant"], refused["tool"], refused["status"]) == (None, None, 401)
    for line in lines:
        assert token not in line and token[len(tokens.PREFIX) :] not in line
        assert "4242" not in line and "vault" not in line and "mst_wrong" not in line


async def _asgi(app: Service, path: str, authorization: str | None = None) -> tuple[int, Any]:
    sent: list[dict[str, Any]] = []
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def test_a_database_that_is_down_is_a_503(postgres_url: str, tmp_path: Path) -> None:
    import anyio

    database = Database(postgres_url, max_size=1)
    database.close()  # every transaction now fails

    def down(token: str) -> str | None:
        raise BackendUnavailable("cannot reach the database")

    app = Service(database, Tenants(_opener(tmp_path, [])), tenant_of=down)
    status, body = anyio.run(_asgi, app, "/health")
    assert status == 503
    assert body == {"status": "error", "version": __version__, "database": "error"}
    status, body = anyio.run(_asgi, app, "/mcp", "Bearer " + tokens.PREFIX + "x" * 43)
    assert status == 503 and body["error"] == "unavailable"


# -- the real thing: Memory.open by URL ----------------------------------------------------


def test_the_service_on_memories_in_the_database(postgres_url: str, db: Database) -> None:
    import anyio

    app = Service(db, Tenants(partial(open_by_url, postgres_url)))
    port, server, thread = _start(app)
    ann, bob = _group(), _group()
    _, ann_token = tokens.add(db, ann)
    _, bob_token = tokens.add(db, bob)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _, (wrote_error, _) = anyio.run(
            _session, url, ann_token, [("memory_write", {"text": "The vault code is 4242"})]
        )
        _, (_, found) = anyio.run(_session, url, ann_token, [("memory_search", {"query": "vault"})])
        _, (_, other) = anyio.run(_session, url, bob_token, [("memory_search", {"query": "vault"})])
    finally:
        server.should_exit = True
        thread.join(30)
        app.tenants.close()
    assert wrote_error is False and "4242" in found and "4242" not in other


# -- the process: memstrata serve --database -----------------------------------------------

# The service as the CLI runs it, each tenant's memory a file workspace under
# ROOT, and a write of a text starting "slow" held until GATE/release exists.
SERVE = r"""
import sys, time
from pathlib import Path

import memstrata.tools as tools
from memstrata import Memory
from memstrata.mcp_server import service

root, gate = Path(sys.argv[1]), Path(sys.argv[2])
service.open_by_url = lambda url, group: Memory.open(root, group, embedder="none")
write = tools._HANDLERS["memory_write"]


def held_write(memory, arguments):
    if str(arguments.get("text", "")).startswith("slow"):
        (gate / "started").touch()
        while not (gate / "release").exists():
            time.sleep(0.02)
    return write(memory, arguments)


tools._HANDLERS["memory_write"] = held_write
from memstrata.cli import main

sys.argv = ["memstrata", *sys.argv[3:]]
main()
"""


def _wait_for(check: Callable[[], bool], what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"the service exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _healthy(port: int) -> bool:
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    except httpx2.HTTPError:
        return False


def _refusing(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _at_once(count: int, call: Callable[[], tuple[bool, str]]) -> None:
    results: list[bool] = []
    workers = [threading.Thread(target=lambda: results.append(call()[0])) for _ in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [False] * count


def _connections(application: str) -> int:
    import psycopg

    with psycopg.connect(postgres_server.admin_url(), autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application,)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.slow
def test_the_service_process_serves_two_tenants_and_stops_cleanly_on_sigterm(
    tmp_path: Path, postgres_url: str, db: Database
) -> None:
    import memstrata

    ann, bob = _group(), _group()
    _, ann_token = tokens.add(db, ann)
    _, bob_token = tokens.add(db, bob)
    root, gate = tmp_path / "root", tmp_path / "gate"
    gate.mkdir()
    port = _free_port()
    command = [sys.executable, "-c", SERVE, str(root), str(gate), "serve"]
    name = f"svc{port}"  # the service's connections, by application_name
    database = f"{postgres_url}&application_name={name}"
    command += ["--database", database, "--port", str(port), "--pool-size", "3"]
    env = {**os.environ, "PYTHONPATH": str(Path(memstrata.__file__).parents[1])}
    errlog = tmp_path / "stderr"
    with errlog.open("wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
    held: list[tuple[bool, str]] = []
    try:
        _wait_for(lambda: _healthy(port), "its health check answered", proc)
        assert _call(port, ann_token, "memory_write", text="The vault code is 4242")[0] is False
        assert _call(port, bob_token, "memory_write", text="The plant is a fern")[0] is False
        error, text = _call(port, bob_token, "memory_search", query="vault code")
        assert error is False and "4242" not in text
        assert _rpc(port, None, "tools/list").status_code == 401
        _at_once(12, lambda: _call(port, bob_token, "memory_status"))
        assert 1 <= _connections(name) <= 3  # --pool-size
        slow = threading.Thread(
            target=lambda: held.append(_call(port, ann_token, "memory_write", text="slow fact"))
        )
        slow.start()
        _wait_for((gate / "started").exists, "the held write started", proc)
        proc.send_signal(signal.SIGTERM)
        _wait_for(lambda: _refusing(port), "the service stopped listening", proc)
        assert proc.poll() is None  # still finishing the write in flight
        (gate / "release").touch()
        slow.join(60)
        assert proc.wait(60) == 0, errlog.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert held and held[0][0] is False, held
    lines = errlog.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # nothing but JSON lines
    assert [r["event"] for r in records if "event" in r] == ["start", "stop"]
    calls = [(r["tenant"], r["tool"], r["status"]) for r in records if r.get("tool")]
    assert (ann, "memory_write", 200) in calls and (bob, "memory_search", 200) in calls
    assert all(secret not in "\n".join(lines) for secret in (ann_token, bob_token, "4242"))
    with Memory.open(root, ann, embedder="none") as memory:
        assert {item.text for item in memory.list()} == {"The vault code is 4242", "slow fact"}


def test_serve_needs_a_postgresql_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memstrata.cli import cli

    monkeypatch.delenv("MEMSTRATA_DATABASE_URL", raising=False)
    missing = CliRunner().invoke(cli, ["serve"])
    assert missing.exit_code == 2 and "--database" in missing.output
    for bad in (str(tmp_path), "sqlite:///x.db", "  "):
        refused = CliRunner().invoke(cli, ["serve", "--database", bad])
        lines = refused.output.strip().splitlines()
        assert refused.exit_code == 1 and len(lines) == 1 and "postgresql://" in lines[0], bad


@pytest.mark.slow
def test_a_port_in_use_is_one_error_line(postgres_url: str, tmp_path: Path) -> None:
    import memstrata

    env = {**os.environ, "PYTHONPATH": str(Path(memstrata.__file__).parents[1])}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "memstrata", "serve", "--database", postgres_url]
            + ["--port", str(port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    *logged, last = done.stderr.strip().splitlines()
    assert done.returncode == 1 and last.startswith("Error: cannot serve on"), done.stderr
    assert all(json.loads(line) for line in logged)
