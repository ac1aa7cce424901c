"""memstrata ui (issue 20), over HTTP in this process: every page, the writes
through the journaled verbs with confirmation, CSRF, the Host check and the
token, the path guard, escaping, and a group's UI kept to its group.
(The browser tests are tests/test_ui_browser.py.)"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import postgres_server
from memstrata import InvalidInput, Memory, ui
from memstrata.cli import cli
from memstrata.ui import app as app_module
from memstrata.ui import render
from memstrata.ui.app import create_app
from memstrata.ui.security import Guard, check_bind
from memstrata.ui.views import Views
from uiserver import SRC, Client, eventually, fill_workspace, served


def fill(memory: Memory) -> dict[str, str]:
    return fill_workspace(
        memory, turns=6, note="Trams and <script>alert(1)</script> pastel de nata."
    )


@pytest.fixture
def opened(ws: Path) -> Iterator[tuple[Memory, dict[str, str]]]:
    memory = Memory.open(ws, embedder="hash")
    ids = fill(memory)
    yield memory, ids
    memory.close()


@pytest.fixture
def client(opened: tuple[Memory, dict[str, str]]) -> Iterator[Client]:
    with served(opened[0]) as client:
        yield client


def test_every_page_answers(client: Client, opened: tuple[Memory, dict[str, str]]) -> None:
    ids = opened[1]
    pages = {
        "/": ["Overview", "long-term facts (live)", "Health", "summaries/s1.md"],
        "/facts": ["I live in Lisbon", "I prefer green tea"],
        "/facts?category=preference": ["green tea"],
        f"/facts/{ids['lisbon']}": ["I live in Lisbon", "History", "created"],
        "/search?q=where+do+I+live": ["MEMORY.md:", "Why this hit", "BM25"],
        "/sessions": ["s1"],
        "/sessions/s1": ["Compaction", "reasoning", "tool call", "summarised up to here"],
        "/layers": ["core/USER.md", "notes/inbox/trip-plan.md"],
        "/layers?prompt=tea&budget=300": ["tokens used", "Long-term memory"],
        "/file?path=MEMORY.md&lines=3-4": ['class="line hl"'],
        "/notes/lisbon-notes": ["Backlinks", "trip-plan"],
    }
    for path, wanted in pages.items():
        reply = client.get(path)
        assert reply.status == 200, (path, reply.body[:500])
        for text in wanted:
            assert text in reply.body, (path, text)
        assert "default-src 'none'" in reply.headers["content-security-policy"]


def test_a_transcript_hit_opens_its_turn(client: Client) -> None:
    found = client.get("/search?q=Porto+trip&layers=transcripts")
    link = re.search(r'class="cite" href="(/sessions/s1\?turn=[^"#]+)', found.body)
    assert link, found.body[:2000]
    turn = client.get(link.group(1).replace("&amp;", "&"))
    assert turn.status == 200 and 'class="turn target' in turn.body


def test_why_a_fact_was_or_was_not_found(
    client: Client, opened: tuple[Memory, dict[str, str]]
) -> None:
    memory, ids = opened
    shown = client.get(f"/search?q=green+tea&expect={ids['tea']}").body
    assert "it is hit 1 above" in shown
    for n in range(30):
        memory.remember(f"tea note {n}: tea tea tea", category="bulk")
    lower = client.get(f"/search?q=tea&k=1&expect={ids['tea']}").body
    assert "in a search of the best 200" in lower or "it was a candidate" in lower
    absent = client.get(f"/search?q=zebra+crossing&expect={ids['lisbon']}").body
    assert "it was not a candidate" in absent
    memory.forget(ids["rex"])
    assert "forgotten" in client.get(f"/search?q=dog&expect={ids['rex']}").body
    new = memory.supersede(ids["lisbon"], "I live in Porto")
    old = client.get(f"/search?q=Lisbon&expect={ids['lisbon']}").body
    assert "it is superseded" in old and new.id
    assert client.get("/search?q=tea&expect=nope").status == 404


def test_a_session_named_with_a_slash(
    client: Client, opened: tuple[Memory, dict[str, str]]
) -> None:
    opened[0].record_turn("tg/chat:42", user="hello from a group chat", assistant="hi")
    listed = client.get("/sessions").body
    assert 'href="/sessions/tg%2Fchat%3A42"' in listed
    page = client.get("/sessions/tg%2Fchat%3A42")
    assert page.status == 200 and "hello from a group chat" in page.body
    assert client.get("/sessions/no-such-session").status == 404


def test_filters_and_pages(client: Client, opened: tuple[Memory, dict[str, str]]) -> None:
    memory = opened[0]
    for n in range(120):
        memory.remember(f"numbered fact {n:03d}", category="bulk")
    first = client.get("/facts?category=bulk")
    assert "numbered fact 119" in first.body and "numbered fact 069" not in first.body
    assert "page 1 of 3" in first.body
    third = client.get("/facts?category=bulk&page=3")
    assert "numbered fact 000" in third.body and "numbered fact 119" not in third.body
    assert "(1)" in client.get("/facts?q=fact+007").body
    assert client.get("/facts?since=2999-01-01").body.count('href="/facts/') == 0
    for bad in ("/facts?page=x", "/facts?validity=maybe", "/facts?since=yesterday"):
        assert client.get(bad).status == 400, bad


def test_a_big_file_is_shown_a_window_at_a_time(
    client: Client, opened: tuple[Memory, dict[str, str]]
) -> None:
    memory = opened[0]
    for n in range(900):
        memory.remember(f"filler fact number {n:04d} " + "x" * 300, category="bulk", sync=False)
    memory.flush()
    whole = client.get("/file?path=MEMORY.md")
    assert "A large file" in whole.body and "lines after" in whole.body
    assert whole.body.count('<span id="L') == 400
    later = client.get("/file?path=MEMORY.md&lines=700-701")
    assert later.body.count('class="line hl"') == 2 and 'id="L700"' in later.body
    assert 'id="L1"' not in later.body and "lines before" in later.body


def test_the_health_check_runs_on_a_thread(client: Client) -> None:
    deadline = time.monotonic() + 60
    while "layout:" not in client.get("/").body:  # doctor's first finding
        assert time.monotonic() < deadline, "doctor never reported"
        time.sleep(0.1)


def test_the_health_check_starts_once_the_overview_was_sent(
    opened: tuple[Memory, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's process would slow the page that asked for it: it starts after."""
    running_in_view: list[bool] = []
    overview = Views.overview

    def watched(self: Views, params: dict[str, str]) -> tuple[str, dict[str, Any]]:
        view = overview(self, params)
        running_in_view.append(self.health._running or self.health._at is not None)
        return view

    monkeypatch.setattr(Views, "overview", watched)
    with served(opened[0]) as client:
        assert "checking…" in client.get("/").body
        eventually(lambda: "layout:" in client.get("/").body)  # then doctor reports
    assert running_in_view[0] is False


def test_a_health_check_still_running_ends_with_the_server(
    opened: tuple[Memory, dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """At 100k facts doctor reads for seconds: a server that stops must not leave
    it running beside whatever runs next (it used to, until it finished)."""
    from memstrata.ui import views as views_module

    slow = tmp_path / "slow-doctor"
    slow.write_text("#!/bin/sh\nexec sleep 60\n")
    slow.chmod(0o755)
    monkeypatch.setattr(views_module.sys, "executable", str(slow))
    health = views_module.Health(opened[0])
    health.due()
    eventually(lambda: health._child is not None, seconds=10)
    child = health._child
    assert child is not None and child.poll() is None
    health.stop()
    eventually(lambda: child.poll() is not None, seconds=10)
    eventually(lambda: health.latest()[1] is not None, seconds=10)  # the check ended
    health.due()  # stopped: no new check
    assert health._child is None and not health._running


def test_the_warm_up_waits_for_the_first_page(
    opened: tuple[Memory, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading the embedding model (warm) while the first page renders would
    slow it down: the warm-up starts once a page was sent."""
    app = create_app(opened[0])
    inspector = app.state.inspector
    seen: list[bool] = []
    warmed = threading.Event()

    def fake_warm(memory: Memory) -> None:
        served = getattr(inspector, "served", None)
        seen.append(served is not None and served.is_set())
        warmed.set()

    monkeypatch.setattr(ui, "warm", fake_warm)
    monkeypatch.setattr(ui, "WARM_AFTER_SECONDS", 60.0, raising=False)
    monkeypatch.setattr(inspector.views.health, "due", lambda: None, raising=False)
    thread = threading.Thread(target=ui._warm, args=(app,), daemon=True)
    thread.start()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/sessions").status_code == 200
    assert warmed.wait(60)
    thread.join(60)
    assert seen == [True]


def test_warming_puts_what_it_built_out_of_the_collectors_reach(
    opened: tuple[Memory, dict[str, str]],
) -> None:
    """At 100k facts a full collection scanned 700k objects (350 ms) in the
    middle of a page: after the warm-up they are frozen, not scanned."""
    before = gc.get_freeze_count()
    try:
        ui.warm(opened[0])
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


def test_correct_through_the_journal(
    client: Client, opened: tuple[Memory, dict[str, str]], ws: Path
) -> None:
    memory, ids = opened
    page = client.get(f"/facts/{ids['lisbon']}")
    form = {"csrf": page.csrf, "text": "I live in Porto", "category": "personal"}
    asked = client.post(f"/facts/{ids['lisbon']}/correct", form)
    assert asked.status == 200 and "Please confirm" in asked.body
    assert "Replace <q>I live in Lisbon</q> by <q>I live in Porto</q>" in asked.body
    assert memory.get(ids["lisbon"]).is_live  # nothing written before the confirmation
    done = client.post(f"/facts/{ids['lisbon']}/correct", {**form, "confirmed": "1"})
    assert done.status == 303
    new_page = client.get(done.headers["location"])
    assert "Corrected" in new_page.body and "replaces" in new_page.body
    old = memory.get(ids["lisbon"])
    assert not old.is_live and old.superseded_by is not None
    assert memory.get(old.superseded_by).text == "I live in Porto"
    timeline = client.get(f"/facts/{ids['lisbon']}").body
    assert "superseded" in timeline and "replaced by: I live in Porto" in timeline
    eventually(lambda: "I live in Porto" in (ws / "MEMORY.md").read_text())


def test_forget_and_restore(client: Client, opened: tuple[Memory, dict[str, str]]) -> None:
    memory, ids = opened
    csrf = client.get(f"/facts/{ids['rex']}").csrf
    gone = client.post(f"/facts/{ids['rex']}/forget", {"csrf": csrf, "confirmed": "1"})
    assert gone.status == 303
    assert ids["rex"] in [entry.item.id for entry in memory.forgotten()]
    page = client.get(gone.headers["location"]).body
    assert "Forgotten" in page and "Restore" in page
    assert "My dog" in client.get("/facts?validity=forgotten").body
    back = client.post(f"/facts/{ids['rex']}/restore", {"csrf": csrf, "confirmed": "1"})
    assert back.status == 303
    assert memory.get(ids["rex"]).is_live
    events = client.get(f"/facts/{ids['rex']}").body
    assert "forgotten" in events and "restored" in events


def test_every_form_needs_the_csrf_field(
    client: Client, opened: tuple[Memory, dict[str, str]]
) -> None:
    memory, ids = opened
    target = f"/facts/{ids['tea']}/forget"
    assert client.post(target, {"confirmed": "1"}).status == 403
    assert client.post(target, {"confirmed": "1", "csrf": "guess"}).status == 403
    csrf = client.get(f"/facts/{ids['tea']}").csrf
    evil = {"Origin": "http://evil.example"}
    assert client.post(target, {"confirmed": "1", "csrf": csrf}, headers=evil).status == 403
    assert memory.get(ids["tea"]).is_live
    assert client.get(target).status == 405
    huge = {"csrf": csrf, "confirmed": "1", "text": "x" * 100_000}
    assert client.post(f"/facts/{ids['tea']}/correct", huge).status == 400
    assert memory.get(ids["tea"]).is_live


def test_the_host_must_be_this_server(opened: tuple[Memory, dict[str, str]]) -> None:
    with served(opened[0]) as client:
        client.host_header = "rebind.attacker.example"
        assert client.get("/").status == 421
        client.host_header = "localhost:1234"
        assert client.get("/").status == 200


def test_a_token_beyond_loopback(opened: tuple[Memory, dict[str, str]]) -> None:
    with pytest.raises(InvalidInput, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(InvalidInput, match="empty"):
        check_bind("127.0.0.1", "  ")
    guard = Guard("0.0.0.0", check_bind("0.0.0.0", "s3cret"))
    with served(opened[0], guard) as client:
        assert client.get("/").status == 401
        assert client.get("/?token=wrong").status == 401
        entered = client.get("/facts?token=s3cret&page=1")
        assert entered.status == 303 and entered.headers["location"] == "/facts?page=1"
        assert "httponly" in entered.headers["set-cookie"].lower()
        assert client.get("/").status == 200  # the cookie
        client.cookies.clear()
        assert client.get("/", headers={"Authorization": "Bearer s3cret"}).status == 200


def test_files_only_through_the_path_guard(client: Client) -> None:
    for path in ("../etc/passwd", "/etc/passwd", ".memstrata/journal.wal", "sessions/s1.jsonl"):
        reply = client.get(f"/file?path={path}")
        assert reply.status == 403, path
        assert "root:" not in reply.body
    assert client.get("/file?path=memory/nothing-here.md").status == 404
    assert client.get("/notes/no-such-note").status == 404


def test_text_is_escaped(client: Client, opened: tuple[Memory, dict[str, str]]) -> None:
    memory = opened[0]
    item = memory.remember('I said <img src=x onerror="alert(1)">', category="fact")
    page = client.get(f"/facts/{item.id}").body
    assert "<img src=x" not in page and "&lt;img src=x" in page
    note = client.get("/notes/lisbon-notes").body
    assert "<script>alert(1)</script>" not in note


def test_compiled_templates_are_kept_between_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiling the first page's templates costs 30-50 ms of start-up: a later
    run loads them compiled."""
    monkeypatch.setattr(render, "CACHE_DIR", str(tmp_path), raising=False)
    render.environment.cache_clear()
    try:
        first = render.page("error.html", **_page_context())
        render.environment.cache_clear()

        def no_compiling(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("compiled again")

        monkeypatch.setattr(jinja2.Environment, "compile", no_compiling)
        assert render.page("error.html", **_page_context()) == first
    finally:
        render.environment.cache_clear()


def test_a_cache_that_cannot_be_written_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "not-a-folder"
    folder.write_text("a file")
    monkeypatch.setattr(render, "CACHE_DIR", str(folder), raising=False)
    render.environment.cache_clear()
    try:
        assert "boom" in render.page("error.html", **_page_context())
    finally:
        render.environment.cache_clear()


def _page_context() -> dict[str, Any]:
    return {
        "csrf": "x",
        "path": "/",
        "group": "main",
        "where": "here",
        "read_only": False,
        "per_page": 50,
        "params": {},
        "qs": lambda params, **changes: "",
        "title": "Error",
        "message": "boom",
    }


def test_a_group_ui_cannot_reach_another_group(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with Memory.open(root, embedder="hash") as main:
        secret = main.remember("The main group's launch code is 4711")
        main.flush()
    with Memory.open(root, "team", embedder="hash") as team, served(team) as client:
        team.remember("The team meets on Mondays")
        team.flush()
        assert client.get(f"/facts/{secret.id}").status == 404
        assert "launch code" not in client.get("/facts?validity=all").body
        found = client.get("/search?q=launch+code")
        assert found.status == 200 and "4711" not in found.body
        for path in ("../../MEMORY.md", "groups/main/MEMORY.md", "../MEMORY.md"):
            assert client.get(f"/file?path={path}").status == 403, path
        own = client.get("/file?path=MEMORY.md").body
        assert "Mondays" in own and "launch code" not in own
        assert "group <b>team</b>" in client.get("/").body
        own_fact = team.list()[0]
        csrf = client.get(f"/facts/{own_fact.id}").csrf
        forged = client.post(f"/facts/{secret.id}/forget", {"csrf": csrf, "confirmed": "1"})
        assert forged.status == 404
    with Memory.open(root, embedder="hash") as main:
        assert main.get(secret.id).is_live


def test_read_only_shows_no_forms_and_refuses_writes(ws: Path) -> None:
    with Memory.open(ws, embedder="hash") as memory:
        item = memory.remember("a fact")
    guard = Guard("127.0.0.1")
    with Memory.open(ws, read_only=True) as memory, served(memory, guard) as client:
        page = client.get(f"/facts/{item.id}")
        assert page.status == 200 and "Change it" not in page.body
        refused = client.post(f"/facts/{item.id}/forget", {"csrf": guard.csrf, "confirmed": "1"})
        assert refused.status in (400, 403, 409, 503) and 'class="error"' in refused.body
    with Memory.open(ws) as memory:
        assert memory.get(item.id).is_live


def test_it_answers_while_the_workspace_opens(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "OPEN_WAIT_SECONDS", 0.2)
    Memory.open(ws, embedder="hash").close()
    release = threading.Event()
    opened: list[Memory] = []

    def slow_open() -> Memory:
        release.wait(60)
        opened.append(Memory.open(ws, embedder="hash"))
        return opened[-1]

    with served(slow_open) as client:
        waiting = client.get("/facts")
        assert waiting.status == 503 and "Opening the workspace" in waiting.body
        assert waiting.headers["retry-after"] == "1"
        release.set()
        eventually(lambda: client.get("/facts").status == 200)
    opened[0].close()


def test_a_page_asked_while_it_opens_waits_for_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first page a browser asks for is the page once the workspace is open,
    not "opening" and a reload a second later."""
    monkeypatch.setattr(app_module, "OPEN_WAIT_SECONDS", 60.0, raising=False)
    Memory.open(ws, embedder="hash").close()
    opened: list[Memory] = []

    def slow_open() -> Memory:
        time.sleep(0.3)
        opened.append(Memory.open(ws, embedder="hash"))
        return opened[-1]

    with served(slow_open) as client:
        first = client.get("/")
        assert first.status == 200 and "Overview" in first.body
    opened[0].close()


def test_a_workspace_that_cannot_open_says_why(ws: Path) -> None:
    def broken() -> Memory:
        raise InvalidInput("no memstrata workspace here")

    with served(broken) as client:
        eventually(lambda: client.get("/").status == 503 and "no memstrata" in client.get("/").body)


@pytest.mark.slow  # starts the session's PostgreSQL
def test_every_page_on_postgresql() -> None:
    url = postgres_server.app_url()
    with Memory.open(url, postgres_server.tenant("ui"), embedder="hash") as memory:
        ids = fill(memory)
        with served(memory) as client:
            for path in (
                "/",
                "/facts",
                f"/facts/{ids['lisbon']}",
                "/search?q=tea",
                "/sessions",
                "/sessions/s1",
                "/layers?prompt=tea&budget=300",
                "/file?path=MEMORY.md",
                "/notes/lisbon-notes",
            ):
                reply = client.get(path)
                assert reply.status == 200, (path, reply.body[:300])
            eventually(lambda: "row-level security" in client.get("/").body)  # doctor's
            csrf = client.get(f"/facts/{ids['rex']}").csrf
            gone = client.post(f"/facts/{ids['rex']}/forget", {"csrf": csrf, "confirmed": "1"})
            assert gone.status == 303 and ids["rex"] in [f.item.id for f in memory.forgotten()]
            assert "forgotten" in client.get(f"/facts/{ids['rex']}").body


def test_the_cli_command(ws: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["ui", "--help"])
    assert shown.exit_code == 0 and "--no-open" in shown.output
    Memory.open(ws).close()
    refused = runner.invoke(cli, ["ui", "-w", str(ws), "--host", "0.0.0.0", "--no-open"])
    assert refused.exit_code == 1 and "without a token" in refused.output
    probe = (
        "import sys, memstrata.cli; "
        "print(sorted(m for m in ('jinja2', 'memstrata.ui', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"  # the web libraries load only when `ui` runs
