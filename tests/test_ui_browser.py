"""memstrata ui end to end (issue 20): ``memstrata ui`` in a subprocess driven
by the system Chromium through Playwright, and its writes surviving SIGKILL.

Screenshots of each page (1200 px and 360 px wide) are kept as test
artifacts in ``$MEMSTRATA_TEST_ARTIFACTS`` (default ``.artifacts/ui`` at the
repository's top; not committed). Skipped, with the reason, where Playwright
or Chromium is missing (``.ci/run`` installs Chromium).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory
from uiserver import Client, eventually, fill_workspace, ui_process

pytestmark = pytest.mark.slow

playwright_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (dev extra)")
CHROMIUM = os.environ.get("MEMSTRATA_CHROMIUM") or shutil.which("chromium")
ARTIFACTS = Path(
    os.environ.get("MEMSTRATA_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[1] / ".artifacts" / "ui"
)
PAGES = {
    "overview": "/",
    "facts": "/facts",
    "search": "/search?q=where+do+I+live",
    "sessions": "/sessions",
    "session": "/sessions/s1",
    "layers": "/layers?prompt=what+tea+do+I+like&budget=400",
    "file": "/file?path=MEMORY.md",
    "note": "/notes/lisbon-notes",
}


def make_workspace(path: Path, group: str | None = None) -> dict[str, str]:
    with Memory.open(path, group, embedder="hash") as memory:
        ids = fill_workspace(memory, turns=5, note="Trams, *tiles* and pastel de nata.")
        config = memory.workspace.path / "memstrata.toml"
    config.write_text(re.sub(r"(?m)^embedder = .*$", 'embedder = "hash"', config.read_text()))
    return ids


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run does)")
    with playwright_api.sync_playwright() as play:
        launched = play.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    ws = tmp_path / "ws"
    ids = make_workspace(ws)
    with ui_process(ws) as (_proc, port):
        yield f"http://127.0.0.1:{port}", ids, ws


def new_page(browser: Any, width: int = 1200) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    return page, problems


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("width", [1200, 360])
def test_each_page_renders(
    browser: Any, site: tuple[str, dict[str, str], Path], width: int
) -> None:
    base, ids, _ = site
    page, problems = new_page(browser, width)
    for name, path in {**PAGES, "fact": f"/facts/{ids['lisbon']}"}.items():
        response = page.goto(base + path)
        assert response is not None and response.status == 200, name
        if name == "search":
            page.click("details.why summary")
        assert page.locator("h1").count() == 1
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} is {overflow}px wider than {width}px"
        shot(page, f"{name}-{width}")
    assert problems == []  # no script error, no asset refused by the CSP


def test_search_and_follow_a_citation(browser: Any, site: tuple[str, dict[str, str], Path]) -> None:
    base, _, _ = site
    page, problems = new_page(browser)
    page.goto(base + "/search")
    page.fill("#q", "green tea")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=green\+tea"))
    citation = page.locator("a.cite").first
    assert citation.inner_text().startswith("MEMORY.md:")
    citation.click()
    page.wait_for_url(re.compile(r"/file\?path=MEMORY\.md&lines=\d+"))
    assert "green tea" in page.locator(".line.hl").first.inner_text()
    shot(page, "citation")
    assert problems == []


def test_correct_a_fact(browser: Any, site: tuple[str, dict[str, str], Path]) -> None:
    base, ids, ws = site
    page, problems = new_page(browser)
    page.goto(f"{base}/facts/{ids['lisbon']}")
    page.fill("#text", "I live in Porto")
    page.click("text=Correct…")
    assert "Please confirm" in page.inner_text("main")
    shot(page, "confirm")
    page.click("text=Yes, correct")
    page.wait_for_url(re.compile(r"/facts/\w+\?done=corrected"))
    assert "Corrected" in page.inner_text("[role=status]")
    assert "replaces" in page.inner_text(".timeline")
    shot(page, "corrected")
    page.goto(f"{base}/facts/{ids['lisbon']}")
    assert "replaced by: I live in Porto" in page.inner_text(".timeline")
    eventually(lambda: "I live in Porto" in (ws / "MEMORY.md").read_text())
    page.goto(base + "/file?path=MEMORY.md")
    assert "I live in Porto" in page.inner_text("main")
    assert problems == []


def test_forget_and_restore(browser: Any, site: tuple[str, dict[str, str], Path]) -> None:
    base, ids, ws = site
    page, problems = new_page(browser)
    page.goto(f"{base}/facts/{ids['rex']}")
    page.click("text=Forget…")
    page.click("text=Yes, forget")
    page.wait_for_url(re.compile(r"done=forgotten"))
    assert "Forgotten" in page.inner_text("[role=status]")
    eventually(lambda: "My dog" not in (ws / "MEMORY.md").read_text())
    page.click("text=Restore…")
    page.click("text=Yes, restore")
    page.wait_for_url(re.compile(r"done=restored"))
    timeline = page.inner_text(".timeline")
    assert "forgotten" in timeline and "restored" in timeline
    eventually(lambda: "My dog is called Rex" in (ws / "MEMORY.md").read_text())
    assert problems == []


def test_keyboard_navigation(browser: Any, site: tuple[str, dict[str, str], Path]) -> None:
    base, _, _ = site
    page, problems = new_page(browser)
    page.goto(base + "/")
    page.keyboard.press("g")
    page.keyboard.press("f")
    page.wait_for_url(base + "/facts")
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/facts/\w+$"))
    page.keyboard.press("/")  # the fact's "would a search find it?" box
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.press("Escape")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("g")
    page.keyboard.press("s")
    page.wait_for_url(base + "/search")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.goto(base + "/layers")
    page.keyboard.press("/")  # no search box here: it opens Search
    page.wait_for_url(base + "/search")
    page.goto(base + "/facts")
    page.keyboard.press("Tab")  # the skip link comes first
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    assert problems == []


def test_a_group_ui_in_the_browser(browser: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    main = make_workspace(root)
    make_workspace(root, "team")
    with ui_process(root, "--group", "team") as (_proc, port):
        page, _ = new_page(browser)
        reply = page.goto(f"http://127.0.0.1:{port}/facts/{main['lisbon']}")
        assert reply is not None and reply.status == 404
        page.goto(f"http://127.0.0.1:{port}/file?path=..%2FMEMORY.md")
        assert "cannot read" in page.inner_text("main")
        assert "group team" in page.inner_text("header")


def test_ui_writes_survive_sigkill(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ids = make_workspace(ws)
    with ui_process(ws) as (proc, port):
        client = Client(port)
        csrf = client.get(f"/facts/{ids['lisbon']}").csrf
        form = {"csrf": csrf, "text": "I live in Porto", "confirmed": "1"}
        corrected = client.post(f"/facts/{ids['lisbon']}/correct", form)
        assert corrected.status == 303
        assert "Corrected" in client.get(corrected.headers["location"]).body
        forgot = client.post(f"/facts/{ids['rex']}/forget", {"csrf": csrf, "confirmed": "1"})
        assert "Forgotten" in client.get(forgot.headers["location"]).body
        os.kill(proc.pid, signal.SIGKILL)  # right after the page confirmed
        proc.wait()
    with Memory.open(ws) as memory:
        old = memory.get(ids["lisbon"])
        assert not old.is_live and old.superseded_by is not None
        assert memory.get(old.superseded_by).text == "I live in Porto"
        assert ids["rex"] in [entry.item.id for entry in memory.forgotten()]
