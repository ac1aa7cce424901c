"""``memstrata mcp`` as a process (issue 13): which hosts the HTTP server
answers, its bearer token, and a clean exit while the index warms up.

Every request goes to 127.0.0.1, whatever the Host header names: a server
bound to 0.0.0.0 is reached through loopback only."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the mcp SDK's HTTP client is not installed")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from memstrata import Memory  # noqa: E402
from test_mcp import _free_port, _start_http, _text, _writer, server_env  # noqa: E402

CLI = [sys.executable, "-c", "from memstrata.cli import main; main()", "mcp"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
FOREIGN = "198.51.100.7"  # TEST-NET-2: no machine's own address


def _initialize(port: int, host: str, token: str | None = None) -> httpx2.Response:
    """POST an initialize to 127.0.0.1:``port`` with ``Host: host:port``."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Host": f"{host}:{port}",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, headers=headers, timeout=30)


@pytest.fixture
def served(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none"):
        pass
    (ws / "memstrata.toml").write_text('[memory]\nembedder = "none"\n')
    return ws


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.communicate(timeout=30)


# -- hosts ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_loopback_server_still_refuses_a_foreign_host(served: Path) -> None:
    port = _free_port()
    proc = _start_http(served, port, "--host", "127.0.0.1")
    try:
        assert _initialize(port, "127.0.0.1").status_code == 200
        assert _initialize(port, "localhost").status_code == 200
        for host in ("evil.example", FOREIGN, socket.gethostname()):
            refused = _initialize(port, host)
            assert refused.status_code == 421, (host, refused.text)
    finally:
        _stop(proc)


@pytest.mark.slow
def test_a_server_bound_to_every_address_answers_its_own_names_with_the_token(
    served: Path,
) -> None:
    import anyio

    port = _free_port()
    token = "s3cret-token"
    extra = "memory.example.test"
    proc = _start_http(served, port, "--host", "0.0.0.0", "--token", token, "--allowed-host", extra)
    try:
        for host in (socket.gethostname(), extra, "127.0.0.1"):
            accepted = _initialize(port, host, token)
            assert accepted.status_code == 200, (host, accepted.text)
            assert '"serverInfo"' in accepted.text
            assert _initialize(port, host).status_code == 401
            assert _initialize(port, host, "wrong-token").status_code == 401
        assert _initialize(port, FOREIGN, token).status_code == 421
        # the official client, naming the machine by its hostname
        headers = {"Authorization": f"Bearer {token}", "Host": f"{socket.gethostname()}:{port}"}
        assert anyio.run(_writer, f"http://127.0.0.1:{port}/mcp", 0, 3, headers) == 3
    finally:
        _stop(proc)


def test_the_allowed_hosts_by_binding() -> None:
    from memstrata.mcp_server import allowed_hosts

    loopback = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
    assert allowed_hosts("127.0.0.1") == loopback
    assert allowed_hosts("localhost", ["proxy.lan"]) == [*loopback, "proxy.lan", "proxy.lan:*"]
    machine = socket.gethostname()
    everywhere = allowed_hosts("0.0.0.0")
    assert set(loopback) | {machine, f"{machine}:*"} <= set(everywhere)
    assert FOREIGN not in everywhere and f"{FOREIGN}:*" not in everywhere
    bound = allowed_hosts("10.1.2.3", ["Box.lan", "box.lan:8765", "fe80::1", "[fd00::2]:9"])
    assert {"10.1.2.3", "10.1.2.3:*", f"{machine}:*", "Box.lan:*", "box.lan:*"} <= set(bound)
    assert {"box.lan:8765", "[fe80::1]:*", "[fd00::2]:9"} <= set(bound)
    assert "box.lan" in bound and "box.lan:8765" in bound and "box.lan:*" in bound
    assert "[fd00::2]" not in bound  # given with a port: that port only
    assert allowed_hosts("::1") == loopback


@pytest.mark.parametrize(
    "bad",
    ["", "  ", "a b", "http://box.lan", "box.lan/mcp", "box.lan:", "box.lan:x", "[box]", "-x"],
)
def test_a_malformed_allowed_host_is_refused(bad: str) -> None:
    from memstrata.errors import InvalidInput
    from memstrata.mcp_server import allowed_hosts

    with pytest.raises(InvalidInput, match="allowed-host"):
        allowed_hosts("0.0.0.0", [bad])


def test_a_malformed_allowed_host_is_one_line_from_the_cli(served: Path) -> None:
    from click.testing import CliRunner

    from memstrata.cli import cli

    result = CliRunner().invoke(
        cli,
        ["mcp", "--http", "--token", "t", "--allowed-host", "a b", "-w", str(served)],
    )
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and "allowed-host" in lines[0], result.output


# -- the token -----------------------------------------------------------------------------


def test_bearer_token_strips_and_refuses_blanks() -> None:
    from memstrata.errors import InvalidInput
    from memstrata.mcp_server import bearer_token

    assert bearer_token(None) is None
    assert bearer_token("  s3cret \n") == "s3cret"
    for blank in ("", " ", "\t\n "):
        with pytest.raises(InvalidInput, match="empty or only whitespace"):
            bearer_token(blank)


async def _guarded(scope_type: str, authorization: bytes | None) -> tuple[bool, list[object]]:
    from memstrata.mcp_server import _BearerGuard

    reached: list[bool] = []
    sent: list[object] = []

    async def app(scope: object, receive: object, send: object) -> None:
        reached.append(True)

    async def receive() -> dict[str, object]:
        return {"type": f"{scope_type}.disconnect"}

    async def send(message: object) -> None:
        sent.append(message)

    headers = [] if authorization is None else [(b"authorization", authorization)]
    await _BearerGuard(app, "s3cret")({"type": scope_type, "headers": headers}, receive, send)
    return bool(reached), sent


@pytest.mark.parametrize(
    ("authorization", "passes"),
    [
        (b"Bearer s3cret", True),
        (b"bearer s3cret", True),  # the scheme is case-insensitive (RFC 7235)
        (b"Bearer  s3cret ", True),
        (b"Bearer s3cre", False),
        (b"Bearer s3cretx", False),
        (b"Basic s3cret", False),
        (b"s3cret", False),
        (b"", False),
        (None, False),
    ],
)
def test_the_bearer_guard(authorization: bytes | None, passes: bool) -> None:
    import anyio

    reached, sent = anyio.run(_guarded, "http", authorization)
    assert reached is passes
    if not passes:
        assert sent[0]["status"] == 401  # type: ignore[index]


def test_the_bearer_guard_closes_a_websocket_and_lets_lifespan_through() -> None:
    import anyio

    reached, sent = anyio.run(_guarded, "websocket", b"Bearer wrong")
    assert not reached and sent == [{"type": "websocket.close", "code": 1008}]
    reached, _ = anyio.run(_guarded, "lifespan", None)
    assert reached


@pytest.mark.slow
@pytest.mark.parametrize("token", ["   ", "", "\t"])
def test_a_blank_token_is_refused_in_one_line(served: Path, token: str) -> None:
    port = _free_port()
    refused = subprocess.run(
        [*CLI, "--http", "--host", "0.0.0.0", "--port", str(port), "-w", str(served)]
        + ["--token", token],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "token" in lines[0] and "empty" in lines[0], refused.stderr


@pytest.mark.slow
def test_the_token_is_stripped_of_surrounding_whitespace(served: Path) -> None:
    port = _free_port()
    proc = _start_http(served, port, "--token", "  s3cret-token \n")
    try:
        assert _initialize(port, "127.0.0.1", "s3cret-token").status_code == 200
        assert _initialize(port, "127.0.0.1", "  s3cret-token \n".strip() + "x").status_code == 401
    finally:
        _stop(proc)


# -- a clean exit --------------------------------------------------------------------------


def _minilm_missing() -> bool:
    modules = ("numpy", "onnxruntime", "tokenizers")
    return any(importlib.util.find_spec(module) is None for module in modules)


async def _one_round(ws: Path, errlog: Path, pause: float) -> None:
    """initialize, one call and close (the server exits while it may still warm
    its index); the server's exit status lands in ``errlog`` + ``.rc``."""
    import anyio

    server = [*CLI, "-w", str(ws)]
    status = f"{errlog}.rc"
    wrapper = (
        "import subprocess; "
        f"code = subprocess.run({server!r}).returncode; "
        f"open({status!r}, 'w').write(str(code))"
    )
    params = StdioServerParameters(command=sys.executable, args=["-c", wrapper], env=server_env(ws))
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            wrote = await session.call_tool("memory_write", {"text": f"Round paused {pause} s"})
            assert not wrote.is_error, _text(wrote)
            await anyio.sleep(pause)


@pytest.mark.slow
@pytest.mark.skipif(_minilm_missing(), reason="the local embedding model is not installed")
def test_the_stdio_server_exits_cleanly_while_the_index_warms_up(tmp_path: Path) -> None:
    import anyio

    template = tmp_path / "template"
    with Memory.open(template, embedder="none") as memory:
        for n in range(3000):  # thousands of chunks to embed: the warm-up runs for seconds
            memory.remember(
                f"fact {n}: the service number {n} listens on port {n + 1024}", sync=False
            )
    (template / "memstrata.toml").write_text('[memory]\nembedder = "minilm"\n')
    # the client closes at once, or while the model loads, or while it embeds
    for number, pause in enumerate((0.0, 0.5, 1.0, 2.0)):
        ws = tmp_path / f"round-{number}"
        shutil.copytree(template, ws)
        errlog = tmp_path / f"round-{number}.stderr"
        anyio.run(_one_round, ws, errlog, pause)
        stderr = errlog.read_text(errors="replace")
        assert "terminate called" not in stderr, (pause, stderr)
        assert Path(f"{errlog}.rc").read_text() == "0", (pause, stderr)
        with Memory.open(ws, embedder="none") as memory:
            assert any(item.text == f"Round paused {pause} s" for item in memory.list())
