"""Helpers of the UI tests: the inspector served in this process (a thread),
or ``memstrata ui`` in a subprocess, and plain HTTP without redirects."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import uvicorn

from memstrata import Memory
from memstrata.ui.app import create_app
from memstrata.ui.security import Guard

SRC = Path(__file__).resolve().parents[1] / "src"


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: str) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def csrf(self) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', self.body)
        assert found, "no form on the page"
        return found.group(1)


class Client:
    """HTTP/1.1 to one server, redirects not followed."""

    def __init__(self, port: int, host_header: str | None = None) -> None:
        self.port = port
        self.host_header = host_header
        self.cookies: dict[str, str] = {}

    def request(
        self,
        method: str,
        path: str,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sent = dict(headers or {})
        if self.host_header is not None:
            sent.setdefault("Host", self.host_header)
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read().decode("utf-8", "replace")
        got = {k.lower(): v for k, v in response.getheaders()}
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        conn.close()
        return Reply(response.status, got, data)

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, form: dict[str, str], **kwargs: Any) -> Reply:
        return self.request("POST", path, form=form, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(memory: Memory | Callable[[], Memory], guard: Guard | None = None) -> Iterator[Client]:
    """The inspector of ``memory`` on a free loopback port, in a thread."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(memory, guard), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield Client(port)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@contextmanager
def ui_process(workspace: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``memstrata ui --no-open`` in a subprocess on a free port, once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(SRC), "MEMSTRATA_EMBEDDER": "hash"}
    command = [sys.executable, "-m", "memstrata", "ui", "-w", str(workspace), "--no-open"]
    proc = subprocess.Popen(
        [*command, "--port", str(port), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_up(port, proc)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def wait_up(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"memstrata ui exited {proc.returncode}: {err}")
        try:
            if Client(port).get("/sessions").status != 503:  # 503: still opening
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("memstrata ui did not start")


def eventually(check: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait until ``check()`` (MEMORY.md is rendered on a thread after a UI write)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.05)


def fill_workspace(memory: Any, *, turns: int, note: str) -> dict[str, str]:
    """Three facts, a session of ``turns`` turns with tool calls (compacted),
    two notes (the second says ``note``): the ids of the facts."""
    lisbon = memory.remember("I live in Lisbon", category="personal")
    tea = memory.remember("I prefer green tea over coffee", category="preference")
    rex = memory.remember("My dog is called Rex", category="personal")
    for n in range(turns):
        memory.record_turn(
            "s1",
            user=f"message {n} about the Porto trip",
            assistant="Noted.",
            reasoning="the user plans a trip",
            tool_calls=[{"name": "lookup", "arguments": {"q": "Porto"}}],
            tool_results=[{"name": "lookup", "content": "Porto is in Portugal"}],
        )
    memory.compact_session("s1")
    memory.sessions.compact("s1", keep=2)
    memory.notes.create("Trip plan", "Visit [[lisbon-notes]] first.")
    memory.notes.create("Lisbon notes", note)
    memory.flush()
    return {"lisbon": lisbon.id, "tea": tea.id, "rex": rex.id}
