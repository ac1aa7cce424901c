"""Groups and the path guard: who may touch which group, and which files a caller may name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import AccessDenied, InvalidInput
from memstrata.storage.access import GLOBAL, Groups, allowed, check_group, resolve

# -- groups -------------------------------------------------------------------------------

MAIN = "main"

GROUP_RULES = [
    # caller, target, write, expected group (None: AccessDenied)
    ("main", None, False, "main"),
    ("main", None, True, "main"),
    ("main", "team-a", False, "team-a"),
    ("main", "team-a", True, "team-a"),
    ("main", GLOBAL, False, GLOBAL),
    ("main", GLOBAL, True, GLOBAL),
    ("team-a", None, False, "team-a"),
    ("team-a", None, True, "team-a"),
    ("team-a", "team-a", True, "team-a"),
    ("team-a", GLOBAL, False, GLOBAL),
    ("team-a", GLOBAL, True, None),
    ("team-a", "team-b", False, None),
    ("team-a", "team-b", True, None),
    ("team-a", "main", False, None),
    ("team-a", "main", True, None),
    (GLOBAL, None, False, GLOBAL),
    (GLOBAL, None, True, None),
    (GLOBAL, "team-a", False, None),
]


@pytest.mark.parametrize(("caller", "target", "write", "expected"), GROUP_RULES)
def test_group_rules(
    tmp_path: Path, caller: str, target: str | None, write: bool, expected: str | None
) -> None:
    groups = Groups(tmp_path, MAIN)
    if expected is None:
        with pytest.raises(AccessDenied) as refused:
            groups.check(caller, target, write=write)
        message = str(refused.value)
        assert repr(caller) in message and "main" in message
        assert repr(target or caller) in message
    else:
        assert groups.check(caller, target, write=write) == expected


def test_refusals_name_the_rule(tmp_path: Path) -> None:
    groups = Groups(tmp_path, MAIN)
    with pytest.raises(AccessDenied, match="only the main group .* writes global memory"):
        groups.check("team-a", GLOBAL, write=True)
    with pytest.raises(AccessDenied, match="reaches only its own workspace and reads 'global'"):
        groups.check("team-a", "team-b", write=False)


@pytest.mark.parametrize(
    "name", ["", "A", "Team", "-x", "_x", "a/b", "..", "a b", "x" * 64, "é", "a\x00", 3, None]
)
def test_bad_group_names_are_invalid_input(tmp_path: Path, name: object) -> None:
    groups = Groups(tmp_path, MAIN)
    with pytest.raises(InvalidInput):
        check_group(name)
    with pytest.raises(InvalidInput):
        groups.check(name, None, write=False)  # type: ignore[arg-type]
    if name is not None:  # a None target is the caller's own group
        with pytest.raises(InvalidInput):
            groups.check(MAIN, name, write=False)  # type: ignore[arg-type]


def test_main_cannot_be_global_or_malformed(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        Groups(tmp_path, GLOBAL)
    with pytest.raises(InvalidInput):
        Groups(tmp_path, "../x")


def test_workspace_and_names(tmp_path: Path) -> None:
    groups = Groups(tmp_path, MAIN)
    assert groups.names() == []
    for name in ("team-a", GLOBAL, ".hidden", "Bad"):
        (tmp_path / "groups" / name).mkdir(parents=True)
    (tmp_path / "groups" / "file").write_text("x")
    assert groups.names() == [GLOBAL, "team-a"]
    assert groups.workspace("team-a", write=True).path == tmp_path / "groups" / "team-a"
    assert groups.workspace("team-a", GLOBAL, write=False).path == tmp_path / "groups" / GLOBAL
    with pytest.raises(AccessDenied):
        groups.workspace("team-a", "team-b", write=False)


NAMES = st.sampled_from([MAIN, GLOBAL, "team-a", "team-b", "x"])


@given(st.lists(st.tuples(NAMES, st.one_of(st.none(), NAMES), st.booleans()), max_size=30))
def test_no_sequence_lets_a_non_main_group_escape(
    checks: list[tuple[str, str | None, bool]],
) -> None:
    groups = Groups(Path("/nonexistent-root"), MAIN)
    for caller, target, write in checks:
        try:
            group = groups.check(caller, target, write=write)
        except AccessDenied:
            continue
        if caller == MAIN:
            assert group == (target or MAIN)
            continue
        assert group in (caller, GLOBAL)
        if group == GLOBAL:
            assert not write
        assert group == (target or caller)


# -- the path guard -------------------------------------------------------------------------

ISSUE_ATTACKS = [
    "../../etc/passwd",
    "/etc/passwd",
    "memory/../../../etc/hostname",
    "..\\..\\x",
    "MEMORY.md/../../secret",
    "memory/%2e%2e/%2e%2e/etc/passwd",
]

MORE_ATTACKS = [
    "",
    " MEMORY.md",
    "MEMORY.md ",
    "MEMORY.md\n",
    "memory/a\x00.md",
    "memory/a\x1b.md",
    "memory/a\u200b.md",  # zero-width space
    "memory\uff0fa.md",  # fullwidth solidus
    "memory/\u2024\u2024/a.md",  # one-dot leaders
    "memory\u2215a.md",  # division slash
    "memory\u2044a.md",  # fraction slash
    "memory/\uff0e\uff0e/a.md",  # fullwidth full stops
    "MEMORY\uff0emd",
    "memory//a.md",
    "memory/a.md/",
    "./MEMORY.md",
    "memory/./a.md",
    "memory/.hidden.md",
    ".memstrata/journal.wal",
    "memory/LTM_SNAPSHOT.json",
    "memory/a.txt",
    "memory/.md",
    "memory/ a.md",
    "memory/sub/a.md",
    "memstrata.toml",
    "sessions/s.md",
    "groups/other/MEMORY.md",
    "core/.hidden.md",
    "core/sub/a.md",
    "core/a.txt",
    "core/.md",
    "notes/a.md",
    "notes/trash/a.md",
    "Memory/a.md",
    "memory/a%20b.md",
    "memory/a%zz.md",
    "C:\\Windows",
    "memory/a*.md",
    "memory/-a.md",
    "memory/" + "a" * 121 + ".md",
]

ALLOWED = [
    "MEMORY.md",
    "memory/2026-01-01.md",
    "memory/project notes.md",
    "memory/v1.2_draft-x.md",
    "core/AGENT.md",
    "core/USER.md",
    "core/SOUL.md",
    "core/OTHER.md",
    "core/PROJECT.md",
    "working/WORKING_MEMORY.md",
    "semantic/facts.md",
    "notes/inbox/idea.md",
    "notes/zettel/bm25.md",
    "notes/maps/retrieval.md",
    "summaries/2026-01-01-s1.md",
    "notes/inbox/заметка.md",
    "memory/" + "a" * 120 + ".md",
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    for folder in ("memory", "core", "notes/inbox", "notes/zettel", ".memstrata"):
        (workspace / folder).mkdir(parents=True)
    (tmp_path / "secret.md").write_text("TOP SECRET\n")
    (workspace / ".memstrata" / "journal.wal").write_text("journal\n")
    return workspace


@pytest.mark.parametrize("requested", ISSUE_ATTACKS + MORE_ATTACKS)
@pytest.mark.parametrize("write", [False, True])
def test_attacks_are_refused(root: Path, requested: str, write: bool) -> None:
    with pytest.raises(AccessDenied) as refused:
        resolve(root, requested, write=write)
    assert ("cannot write" if write else "cannot read") in str(refused.value)


@pytest.mark.parametrize(
    ("requested", "reason"),
    [
        ("../../etc/passwd", "'.' and '..' segments"),
        ("/etc/passwd", "absolute paths"),
        ("..\\..\\x", "backslashes"),
        ("memory/%2e%2e/%2e%2e/etc/passwd", "URL-encoded"),
        ("memory/a\x00.md", "control"),
        ("memory\uff0fa.md", "look-alike"),
        ("memory//a.md", "empty path segments"),
        ("memory/.x.md", "hidden"),
        (" MEMORY.md", "whitespace"),
        ("memory/a.txt", "not an allowed memory file"),
    ],
)
def test_refusals_say_why(root: Path, requested: str, reason: str) -> None:
    with pytest.raises(AccessDenied, match=reason.replace(".", r"\.").replace("(", r"\(")):
        resolve(root, requested, write=False)


@pytest.mark.parametrize("requested", ALLOWED)
def test_allowed_paths_pass(root: Path, requested: str) -> None:
    path = resolve(root, requested, write=True)
    assert path == Path(os.path.realpath(root)) / requested
    assert path.is_absolute()


def test_non_strings_are_invalid_input(root: Path) -> None:
    with pytest.raises(InvalidInput):
        resolve(root, b"MEMORY.md", write=False)  # type: ignore[arg-type]


def test_a_symlink_out_of_the_workspace_is_refused(root: Path) -> None:
    (root / "notes" / "inbox" / "evil.md").symlink_to(root.parent / "secret.md")
    with pytest.raises(AccessDenied, match="outside the workspace") as refused:
        resolve(root, "notes/inbox/evil.md", write=False)
    assert "TOP SECRET" not in str(refused.value)
    with pytest.raises(AccessDenied):
        resolve(root, "notes/inbox/evil.md", write=True)


def test_a_symlinked_folder_out_of_the_workspace_is_refused(root: Path) -> None:
    outside = root.parent / "elsewhere"
    outside.mkdir()
    (root / "semantic").symlink_to(outside)
    with pytest.raises(AccessDenied, match="outside the workspace"):
        resolve(root, "semantic/facts.md", write=True)


def test_a_symlink_to_a_system_file_inside_is_refused(root: Path) -> None:
    (root / "memory" / "j.md").symlink_to(root / ".memstrata" / "journal.wal")
    with pytest.raises(AccessDenied, match="not an allowed memory file"):
        resolve(root, "memory/j.md", write=False)


def test_a_symlink_between_allowed_files_resolves_to_the_target(root: Path) -> None:
    (root / "notes" / "inbox" / "a.md").write_text("# A\n")
    (root / "notes" / "zettel" / "b.md").symlink_to(root / "notes" / "inbox" / "a.md")
    target = resolve(root, "notes/zettel/b.md", write=False)
    assert target == Path(os.path.realpath(root)) / "notes" / "inbox" / "a.md"


def test_a_symlink_loop_and_non_files_are_refused(root: Path) -> None:
    (root / "memory" / "loop.md").symlink_to(root / "memory" / "loop.md")
    with pytest.raises(AccessDenied):
        resolve(root, "memory/loop.md", write=False)
    (root / "memory" / "dir.md").mkdir()
    with pytest.raises(AccessDenied, match="not a regular file"):
        resolve(root, "memory/dir.md", write=True)
    os.mkfifo(root / "memory" / "fifo.md")
    with pytest.raises(AccessDenied, match="not a regular file"):
        resolve(root, "memory/fifo.md", write=False)


def test_a_symlinked_workspace_root_is_fine(root: Path) -> None:
    alias = root.parent / "alias"
    alias.symlink_to(root)
    assert resolve(alias, "MEMORY.md", write=True) == Path(os.path.realpath(root)) / "MEMORY.md"


PIECES = st.sampled_from(
    [
        "..",
        "/",
        "\\",
        "%2e",
        "%2f",
        "%2E",
        "%",
        "\x00",
        "\n",
        ".",
        "\uff0f",
        "\u2024",
        "\u2215",
        "\u2044",
        "\uff0e",
        "\uff3c",
        "\u200b",
        " ",
        "MEMORY.md",
        "memory/",
        "core/",
        "notes/",
        "notes/inbox/",
        "semantic/",
        "summaries/",
        "working/",
        ".memstrata/",
        "evil.md",
        "loop.md",
        "a",
        ".md",
        "etc/passwd",
    ]
)
HOSTILE = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=8).map("".join)


@settings(
    max_examples=400,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(requested=HOSTILE, write=st.booleans())
def test_resolve_never_gives_anything_but_an_allowed_file_inside(
    root: Path, requested: str, write: bool
) -> None:
    link = root / "notes" / "inbox" / "evil.md"
    if not link.is_symlink():
        link.symlink_to(root.parent / "secret.md")
    try:
        path = resolve(root, requested, write=write)
    except (AccessDenied, InvalidInput):
        return
    real_root = Path(os.path.realpath(root))
    assert path.is_absolute()
    assert path == Path(os.path.realpath(path))
    relative = path.relative_to(real_root)  # raises if outside
    assert allowed(relative.as_posix())
    assert ".." not in relative.parts
