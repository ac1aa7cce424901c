"""The notebook: notes in inbox/zettel/maps, wiki links, backlinks, and safe names."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import AccessDenied, Conflict, InvalidInput, NotFound, StorageError
from memstrata.model import clean_text
from memstrata.storage.workspace import Workspace
from memstrata.stores import notebook
from workspaces import fresh


def test_create_puts_a_titled_note_in_the_inbox(workspace: Workspace) -> None:
    note = notebook.create(workspace, "Retrieval: BM25 vs. dense!", "Body line.\n\nMore.")
    assert note == notebook.Note(
        "retrieval-bm25-vs-dense",
        "inbox",
        workspace.path / "notes" / "inbox" / "retrieval-bm25-vs-dense.md",
    )
    assert note.path.read_text() == "# Retrieval: BM25 vs. dense!\n\nBody line.\n\nMore.\n"
    assert notebook.read(workspace, note.name) == note.path.read_text()
    assert notebook.create(workspace, "Empty").path.read_text() == "# Empty\n"


def test_a_taken_name_gets_a_short_suffix(workspace: Workspace) -> None:
    first = notebook.create(workspace, "Same title")
    notebook.promote(workspace, first.name)
    second = notebook.create(workspace, "Same title")
    assert second.name.startswith("same-title-") and len(second.name) == len("same-title-") + 4
    assert first.path.exists() is False  # it moved
    assert (workspace.path / "notes" / "zettel" / "same-title.md").read_text() == "# Same title\n"


def test_titles_in_any_script_make_readable_names(workspace: Workspace) -> None:
    assert notebook.create(workspace, "Заметка о памяти").name == "заметка-о-памяти"
    assert notebook.create(workspace, "记忆 系统").name == "记忆-系统"
    assert notebook.create(workspace, "!!!").name == "note"
    assert len(notebook.create(workspace, "word " * 40).name) <= 60


def test_new_text_is_redacted(workspace: Workspace) -> None:
    note = notebook.create(
        workspace,
        "key api_key=sk-proj-abcdefghijklmnop1234",
        "use ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    )
    text = note.path.read_text()
    assert "sk-proj" not in text and "ghp_" not in text and "sk-proj" not in note.name


@pytest.mark.parametrize(
    "name", ["../x", "a/b", "a\\b", "x\x00y", "/etc/passwd", "..", ".hidden", "", " x", "a\nb"]
)
def test_unsafe_names_are_refused(workspace: Workspace, name: str) -> None:
    for call in (
        notebook.find,
        notebook.read,
        notebook.links,
        notebook.promote,
        notebook.backlinks,
    ):
        with pytest.raises(InvalidInput, match="not allowed"):
            call(workspace, name)
    with pytest.raises(InvalidInput):
        notebook.create_map(workspace, "Map", [name])
    with pytest.raises(InvalidInput):
        notebook.move(workspace, "fine", "../outside")


def test_a_symlink_out_of_the_workspace_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# secret\n")
    (workspace.path / "notes" / "zettel" / "leak.md").symlink_to(outside)
    with pytest.raises(AccessDenied, match="outside the workspace"):
        notebook.read(workspace, "leak")


def test_promote_moves_from_inbox_to_zettel(workspace: Workspace) -> None:
    note = notebook.create(workspace, "Idea", "text")
    kept = notebook.promote(workspace, note.name)
    assert kept.folder == "zettel" and kept.path.read_text() == "# Idea\n\ntext\n"
    assert not note.path.exists()
    assert notebook.promote(workspace, note.name) == kept
    assert notebook.find(workspace, "idea.md") == kept
    assert [n.folder for n in notebook.list_notes(workspace)] == ["zettel"]
    with pytest.raises(NotFound, match="no note called 'nothing'"):
        notebook.promote(workspace, "nothing")
    with pytest.raises(InvalidInput, match="inbox, zettel, maps"):
        notebook.move(workspace, "idea", "archive")


def test_promote_never_overwrites(workspace: Workspace) -> None:
    note = notebook.create(workspace, "Twin", "inbox copy")
    (workspace.path / "notes" / "zettel" / "twin.md").write_text("# Twin\n\nzettel copy\n")
    with pytest.raises(Conflict, match="exists already"):
        notebook.promote(workspace, note.name)
    assert note.path.read_text() == "# Twin\n\ninbox copy\n"


def test_an_interrupted_move_is_finished(workspace: Workspace) -> None:
    note = notebook.create(workspace, "Half", "moved")
    os.link(note.path, workspace.path / "notes" / "zettel" / "half.md")  # died before unlink
    kept = notebook.promote(workspace, "half")
    assert kept.path.read_text() == "# Half\n\nmoved\n" and not note.path.exists()


def test_links_and_backlinks(workspace: Workspace) -> None:
    a = notebook.create(workspace, "Alpha", "See [[beta]] and [[gamma|the third]].")
    b = notebook.create(workspace, "Beta", "Back to [[alpha#Intro]]. Also [[beta]].")
    notebook.create(workspace, "Gamma", "```\n[[alpha]] in code is not a link\n```")
    notebook.promote(workspace, a.name)
    assert notebook.links(workspace, "alpha") == ["beta", "gamma"]
    assert notebook.links(workspace, "gamma") == []
    assert [n.name for n in notebook.backlinks(workspace, "alpha")] == ["beta"]
    assert [n.name for n in notebook.backlinks(workspace, "beta")] == ["alpha"]
    assert notebook.backlinks(workspace, "missing") == []
    assert notebook.link(workspace, b.name, "gamma") is True
    assert notebook.link(workspace, b.name, "gamma") is False
    assert notebook.read(workspace, "beta") == (
        "# Beta\n\nBack to [[alpha#Intro]]. Also [[beta]].\n\n- [[gamma]]\n"
    )
    assert notebook.link(workspace, b.name, "alpha") is False
    with pytest.raises(NotFound):
        notebook.link(workspace, "beta", "nowhere")


def test_maps_list_links(workspace: Workspace) -> None:
    notebook.create(workspace, "Alpha")
    notebook.create(workspace, "Beta")
    index = notebook.create_map(workspace, "Memory research", ["alpha", "beta.md"], "Start here.")
    assert index.folder == "maps"
    assert index.path.read_text() == "# Memory research\n\nStart here.\n\n- [[alpha]]\n- [[beta]]\n"
    notebook.create(workspace, "Gamma")
    assert notebook.link(workspace, index.name, "gamma") is True
    assert index.path.read_text().endswith("- [[beta]]\n- [[gamma]]\n")
    assert notebook.links(workspace, index.name) == ["alpha", "beta", "gamma"]
    assert notebook.backlinks(workspace, "gamma") == [index]
    assert notebook.list_notes(workspace, "maps") == [index]


def test_backlinks_read_past_a_corrupt_note(workspace: Workspace) -> None:
    notebook.create(workspace, "Target")
    (workspace.path / "notes" / "zettel" / "bad.md").write_bytes(b"# Bad \xff\n[[target]]\n")
    assert [n.name for n in notebook.backlinks(workspace, "target")] == ["bad"]


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_any_title_makes_a_note_inside_the_inbox(title: str) -> None:
    try:
        heading = clean_text(title)
    except InvalidInput:
        return
    with tempfile.TemporaryDirectory() as root:
        workspace = fresh(Path(root))
        note = notebook.create(workspace, title)
        assert note.path.parent == workspace.path / "notes" / "inbox"
        assert notebook.check_name(note.name) == note.name
        assert notebook.find(workspace, note.name) == note
        first_line = note.path.read_text().split("\n", 1)[0]
        assert first_line.startswith("# ") and (heading in first_line or "[REDACTED" in first_line)


@settings(max_examples=200)
@given(st.text(max_size=30))
def test_a_checked_name_stays_one_plain_file_name(name: str) -> None:
    try:
        bare = notebook.check_name(name)
    except InvalidInput:
        return
    path = Path("/ws/notes/inbox") / f"{bare}.md"
    assert path.parent == Path("/ws/notes/inbox")
    assert ".." not in bare and "\x00" not in bare and not bare.startswith(".")


def test_a_symlink_loop_is_skipped_by_listings_and_refused_in_one_line(
    workspace: Workspace,
) -> None:
    notebook.create(workspace, "Kept")
    os.symlink("loop.md", workspace.path / "notes" / "inbox" / "loop.md")
    assert [note.name for note in notebook.list_notes(workspace)] == ["kept"]
    assert notebook.backlinks(workspace, "kept") == []
    with pytest.raises(StorageError, match="symbolic links"):
        notebook.read(workspace, "loop")
