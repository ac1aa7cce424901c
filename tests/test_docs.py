"""The documentation stays true: every Python example in README.md and docs/
runs as written, every relative link leads to a file, and the README stays
short enough to read in five minutes.

A ```python block runs in a fresh interpreter whose working directory and
$HOME are a new temporary directory (so ``~/agent-memory`` is a fresh
workspace) and whose $MEMSTRATA_HOME points inside it. A fragment that
cannot run on its own is fenced as ```python no-run; the test skips it by name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memstrata

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
README_MAX_LINES = 250

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _blocks(path: Path) -> list[tuple[int, str, str]]:
    """Fenced blocks of ``path``: (line of the opening fence, info string, code)."""
    found = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info, start = opening["fence"], opening["info"].strip(), i
        body = []
        i += 1
        while i < len(lines) and not re.match(
            rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]
        ):
            body.append(lines[i])
            i += 1
        found.append((start + 1, info, "\n".join(body) + "\n"))
        i += 1
    return found


def _python_blocks() -> list[pytest.ParameterSet]:
    params = []
    for path in DOCS:
        for line, info, code in _blocks(path):
            words = info.split()
            if not words or words[0] not in ("python", "py"):
                continue
            name = f"{path.relative_to(ROOT)}:{line}"
            marks = [pytest.mark.skip(reason="fenced as no-run")] if "no-run" in words[1:] else []
            params.append(pytest.param(code, id=name, marks=marks))
    return params


def _outside_code_lines(path: Path) -> list[str]:
    """The lines of ``path`` that are not inside a fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fenced: set[int] = set()
    for line, _info, code in _blocks(path):
        fenced.update(range(line - 1, line + code.count("\n") + 1))
    return [text for number, text in enumerate(lines) if number not in fenced]


def _outside_code(path: Path) -> str:
    """The text of ``path`` without its fenced blocks and inline code spans."""
    return re.sub(r"(`+)[^`]*?\1", "", "\n".join(_outside_code_lines(path)))


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings of ``path``."""
    anchors: set[str] = set()
    for line in _outside_code_lines(path):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            continue
        slug = heading[1].strip().lower()
        slug = re.sub(r"[^\w\- ]", "", slug.replace("`", "")).replace(" ", "-")
        anchor, n = slug, 1
        while anchor in anchors:
            anchor, n = f"{slug}-{n}", n + 1
        anchors.add(anchor)
    return anchors


def test_every_doc_has_python_examples_to_check() -> None:
    assert len(_python_blocks()) >= 5  # the collection below is not silently empty


@pytest.mark.slow  # a Python process per example (about 10 CPU-s together)
@pytest.mark.parametrize("code", _python_blocks())
def test_python_example_runs(code: str, tmp_path: Path) -> None:
    package_root = Path(memstrata.__file__).resolve().parent.parent
    env = dict(os.environ)
    env.update(
        HOME=str(tmp_path),
        MEMSTRATA_HOME=str(tmp_path / "memstrata-home"),
        PYTHONPATH=os.pathsep.join([str(package_root), env.get("PYTHONPATH", "")]),
        PYTHONWARNINGS="error",
    )
    if "MEMSTRATA_DATABASE_URL" in code:  # an example on PostgreSQL: the session's server
        import postgres_server

        env["MEMSTRATA_DATABASE_URL"] = postgres_server.app_url()
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings(path: Path) -> None:
    broken = []
    for match in _LINK.finditer(_outside_code(path)):
        target = match["target"]
        if _SCHEME.match(target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES


def test_every_doc_has_a_title_and_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in DOCS:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# "), f"{path.name} opens without a title"
        if path.parent.name == "docs":
            assert f"(docs/{path.name})" in readme, f"README does not link docs/{path.name}"
